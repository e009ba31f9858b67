"""Local executor vs Ray: 2,000 units of `inject run` against bench/fake_provider.py.

Two server settings, each run with `--executor local` and `--executor ray` (a local Ray started by the command:
one worker per CPU), rounds interleaved:

  slow     1.0 s latency, --concurrency 64: waiting-bound; the ideal wall is 2,000 x 1.0 / 64 = 31 s
  instant  no latency, --concurrency 64: CPU-bound (litellm, parsing, validation)

Figures: wall of the whole command (start-up included), the start-up (wall of the same command on 1 unit), units/s
over the wall, and units/s after start-up (2,000 / (wall - start-up)). Every run is checked: 2,000 units written,
no unit twice.

    python bench/ray_executor.py                     # both settings, 2 rounds (~10 min on 2 busy cores)
    python bench/ray_executor.py --only instant --rounds 1 --units 500
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

OFFLINE_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1",
               "HF_DATASETS_OFFLINE": "1", "RAY_USAGE_STATS_ENABLED": "0"}
os.environ.update(OFFLINE_ENV)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_provider import ProviderProcess  # noqa: E402
from run_loop import make_input  # noqa: E402

INJECT = Path(sys.executable).parent / "inject"
MODEL = "openai/bench"
CATEGORY = "counterfactual"
SETTINGS = {"slow": {"latency": 1.0}, "instant": {"latency": 0.0}}
CONCURRENCY = 64


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def command(input_path: Path, out: Path, api_base: str, executor: str, limit: int) -> list[str]:
    return [str(INJECT), "run", "--category", CATEGORY, "--input", str(input_path), "--input-format", "trajectories",
            "--limit", str(limit), "--model", MODEL, "--api-base", api_base, "--out", str(out), "--no-cache",
            "--concurrency", str(CONCURRENCY), "--executor", executor]


def timed(args: list[str], log_path: Path) -> float:
    with log_path.open("w") as output:
        start = time.monotonic()
        code = subprocess.run(args, stdout=output, stderr=subprocess.STDOUT, env={**os.environ, **OFFLINE_ENV}).returncode
        wall = time.monotonic() - start
    if code != 0:
        raise SystemExit(f"{' '.join(args)} exited {code}; see {log_path}")
    return wall


def check(out: Path, units: int) -> None:
    ids: Counter[str] = Counter()
    for name in ("candidates.jsonl", "rejects.jsonl"):
        path = out / name
        if path.exists():
            ids.update(json.loads(line)["id"] for line in path.read_text().splitlines())
    if len(ids) != units or max(ids.values()) != 1:
        raise SystemExit(f"{out}: {len(ids)} units written (expected {units}), most lines for one unit "
                         f"{max(ids.values(), default=0)}")


def measure(setting: str, units: int, rounds: int, work: Path) -> dict[str, Any]:
    input_path = make_input(work / "input.jsonl", units)
    walls: dict[str, list[float]] = {"local": [], "ray": []}
    startup: dict[str, list[float]] = {"local": [], "ray": []}
    with ProviderProcess(**SETTINGS[setting]) as provider:
        for round_ in range(rounds):
            for executor in ("local", "ray"):
                tag = f"{setting}-{executor}-{round_}"
                one = timed(command(input_path, work / f"{tag}-one", provider.api_base, executor, 1),
                            work / f"{tag}-one.log")
                full = timed(command(input_path, work / tag, provider.api_base, executor, units), work / f"{tag}.log")
                check(work / tag, units)
                startup[executor].append(one)
                walls[executor].append(full)
                log(f"{tag}: {units} units in {full:.1f} s (1 unit: {one:.1f} s)")
    row: dict[str, Any] = {"setting": setting, "units": units, "rounds": rounds}
    for executor in ("local", "ray"):
        wall, start = statistics.median(walls[executor]), statistics.median(startup[executor])
        row[executor] = {"walls": walls[executor], "startups": startup[executor], "wall": wall, "startup": start,
                         "rate": units / wall, "rate_after_startup": units / max(wall - start, 1e-9)}
    row["ratio"] = row["ray"]["rate"] / row["local"]["rate"]
    row["ratio_after_startup"] = row["ray"]["rate_after_startup"] / row["local"]["rate_after_startup"]
    return row


RAY_ALONE = ("import logging, time; start = time.monotonic(); import ray; "
             "ray.init(address='local', include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR); "
             "ray.shutdown(); print(time.monotonic() - start)")


def ray_alone() -> float:
    """Seconds to import Ray, start a local session and shut it down, with nothing else (part of the start-up)."""
    result = subprocess.run([sys.executable, "-c", RAY_ALONE], capture_output=True, text=True, check=True,
                            env={**os.environ, **OFFLINE_ENV})
    return float(result.stdout.strip().splitlines()[-1])


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| server | executor | wall (s), each round | start-up: 1 unit (s) | units/s | units/s after start-up |",
             "|---|---|---|---|---|---|"]
    for row in rows:
        for executor in ("local", "ray"):
            r = row[executor]
            lines.append(f"| {row['setting']} | {executor} | {', '.join(f'{w:.1f}' for w in r['walls'])} | "
                         f"{r['startup']:.1f} | {r['rate']:.1f} | {r['rate_after_startup']:.1f} |")
        lines.append(f"| {row['setting']} | **ray / local** | | | **{row['ratio']:.2f}** | "
                     f"**{row['ratio_after_startup']:.2f}** |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--units", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", choices=sorted(SETTINGS), action="append")
    parser.add_argument("--json", type=Path, help="Also write the figures here.")
    args = parser.parse_args()
    log(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-ray-") as work:
        for setting in args.only or list(SETTINGS):
            rows.append(measure(setting, args.units, args.rounds, Path(work)))
    alone = [ray_alone() for _ in range(args.rounds)]
    log(f"load average at the end {os.getloadavg()[0]:.1f}")
    print(table(rows))
    print(f"\nimport ray + ray.init + ray.shutdown alone: {', '.join(f'{s:.1f}' for s in alone)} s")
    rows.append({"ray_alone": alone})
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
