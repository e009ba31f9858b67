"""Scenario 4 of run_loop.py (10% 429, 5% 500, 2% timeouts, 5% malformed; 1,000 units, --concurrency 32), run
in-process so that the run-wide pauses can be counted: calls to `RateLimiter.pause` and the seconds during which
the whole run was paused (the union of the pause intervals). Prints one JSON line.

    python bench/scenario4_pauses.py                              # the library this interpreter imports
    PYTHONPATH=<another checkout> python bench/scenario4_pauses.py  # e.g. main, for a before/after comparison
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import run_loop  # noqa: E402  (sets the offline environment first)
from fake_provider import ProviderProcess  # noqa: E402

import injector  # noqa: E402
import injector.engines.limits as limits  # noqa: E402
from injector.cli.commands import main as inject_main  # noqa: E402

FAULTS = {"p429": 0.10, "retry_after": 1, "p500": 0.05, "ptimeout": 0.02, "hang": 6, "pmalformed": 0.05}


def main() -> None:
    intervals: list[tuple[float, float]] = []
    original = limits.RateLimiter.pause

    def pause(self, seconds: float) -> None:
        intervals.append((time.monotonic(), time.monotonic() + seconds))
        original(self, seconds)

    limits.RateLimiter.pause = pause  # type: ignore[method-assign]
    with tempfile.TemporaryDirectory(prefix="scenario4-") as temporary, \
            ProviderProcess(latency=0.2, seed=4, **FAULTS) as provider:
        work = Path(temporary)
        input_path = run_loop.make_input(work / "s4.jsonl", 1000)
        args = run_loop.inject_command(input_path, work / "run", provider.api_base, "--no-cache", "--timeout", "2",
                                       "--concurrency", "32")[1:]
        start = time.monotonic()
        try:
            inject_main(args, standalone_mode=False)
        except SystemExit:
            pass
        wall = time.monotonic() - start
        counts = provider.stats()["counts"]
    paused, end = 0.0, 0.0
    for begin, finish in sorted(intervals):
        begin = max(begin, end)
        if finish > begin:
            paused, end = paused + finish - begin, finish
    print(json.dumps({"library": str(Path(injector.__file__).parent), "wall": round(wall, 1),
                      "pause_calls": len(intervals), "paused_seconds": round(paused, 1), "server": counts}))


if __name__ == "__main__":
    main()
