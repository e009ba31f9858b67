"""The nesting bound of every JSONL reader (`loads_bounded`): the old Python walk of each decoded value against
the text check (bracket counts outside strings, in C), side by side on the same lines, with `json.loads` alone as
the floor. Lines: real PRMBench records and PRM800K label records (tests/fixtures), and candidate lines of an
offline run when `--run DIR` names one.

    python bench/json_bounds.py
    python bench/json_bounds.py --run /tmp/scale/run-10000 --repeat 3
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from injector.util.json_bounds import MAX_JSON_DEPTH, TooDeep, loads_bounded, nests_deeper  # noqa: E402


def old_loads_bounded(text: str):
    """The reader as it was: decode, then walk the decoded value in Python."""
    value = json.loads(text)
    if nests_deeper(value, MAX_JSON_DEPTH):
        raise TooDeep()
    return value


def cpu_seconds(function, lines: list[str], repeat: int) -> float:
    """The fastest of `repeat` passes (CPU seconds): the least disturbed by a shared machine."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        for line in lines:
            function(line)
        best = min(best, time.process_time() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, help="a run directory whose candidates.jsonl to read as well")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    groups = {"PRMBench records": sorted((ROOT / "tests/fixtures/prmbench").glob("*.jsonl")),
              "PRM800K label records": sorted((ROOT / "tests/fixtures/prm800k").glob("*.jsonl"))}
    if args.run:
        groups["candidate lines"] = [args.run / "candidates.jsonl"]
    print(f"{'lines':<22} {'n':>6} {'avg bytes':>9} {'loads ms':>9} {'old ms':>8} {'new ms':>8} "
          f"{'check old/new':>13}")
    for name, paths in groups.items():
        lines = [line for path in paths for line in path.read_text(encoding="utf-8").splitlines() if line]
        floor = cpu_seconds(json.loads, lines, args.repeat)
        old = cpu_seconds(old_loads_bounded, lines, args.repeat)
        new = cpu_seconds(loads_bounded, lines, args.repeat)
        ratio = (old - floor) / max(new - floor, 1e-9)
        print(f"{name:<22} {len(lines):>6} {sum(map(len, lines)) // len(lines):>9} {floor * 1e3:>9.1f} "
              f"{old * 1e3:>8.1f} {new * 1e3:>8.1f} {ratio:>13.1f}")
    print("ms: CPU of the fastest pass over the lines; check old/new: the cost beyond json.loads, old over new")


if __name__ == "__main__":
    main()
