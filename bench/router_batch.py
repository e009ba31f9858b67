"""Beyond one machine (issue 19): per-server rate under the litellm Router, and a batch round trip on the stub.

  router  two fake providers (bench/fake_provider.py, each its own process) that enforce a sliding-window rpm
          (429 beyond it) of 120 and 60; `inject run --deployments` with those limits in the file. Per server:
          answers per minute over the run, the most answers in any 60 s window, and 429s (a breach of the limit).
          Goal: each server's rate within 10 % of its limit, and no window over it.
  batch   `inject run --batch` on 2,000 units against tests/batch_server.py (OpenAI's files and batches API, one
          state step per poll, --batch-poll-seconds 0, --batch-max-requests 400, 3 % of lines fail on their first
          submission and the second batch expires): wall time, batches, requests submitted, units accounted for.

    python bench/router_batch.py                    # both (~3 min)
    python bench/router_batch.py --only batch --units 2000
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

from fake_provider import ProviderProcess, as_edits, parse_prompt, valid_answer  # noqa: E402
from run_loop import make_input  # noqa: E402

CATEGORY = "counterfactual"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1",
       "HF_DATASETS_OFFLINE": "1"}


def inject(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    binary = Path(sys.executable).parent / "inject"
    return subprocess.run([str(binary), *args], cwd=cwd, env=ENV, capture_output=True, text=True)


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def bench_router(work: Path, limits: tuple[int, int], minutes: float) -> dict:
    units = int(sum(limits) * minutes)
    input_path = make_input(work / "router.jsonl", units)
    providers = [ProviderProcess(rpm=limit) for limit in limits]
    for provider in providers:
        provider.__enter__()
    try:
        deployments = work / "deployments.yaml"
        deployments.write_text("model: fake\ndeployments:\n" + "".join(
            f"  - model: openai/fake\n    api_base: {p.api_base}\n    rpm: {limit}\n"
            for p, limit in zip(providers, limits)))
        started = time.monotonic()
        result = inject("run", "--category", CATEGORY, "--input", str(input_path), "--deployments", str(deployments),
                        "--out", str(work / "router-run"), "--cache", str(work / "cache.sqlite"),
                        "--concurrency", "16", "--timeout", "30", cwd=work)
        wall = time.monotonic() - started
        stats = [p.stats() for p in providers]
    finally:
        for provider in providers:
            provider.__exit__(None, None, None)
    if result.returncode != 0:
        raise SystemExit(f"inject run failed ({result.returncode}): {result.stderr[-2000:]}")
    first = min(min(s["ok_times"]) for s in stats if s["ok_times"])
    last = max(max(s["ok_times"]) for s in stats if s["ok_times"])
    rows = []
    for limit, s in zip(limits, stats):
        times = sorted(s["ok_times"])
        busiest = max(sum(1 for t in times if start <= t < start + 60) for start in times) if times else 0
        rate = len(times) / ((last - first) / 60) if last > first else 0.0
        rows.append({"limit_rpm": limit, "answers": len(times), "rpm": round(rate, 1),
                     "ratio": round(rate / limit, 3), "busiest_60s": busiest,
                     "http_429": s["counts"].get("429_rpm", 0)})
    candidates = lines(work / "router-run" / "candidates.jsonl")
    rejects = lines(work / "router-run" / "rejects.jsonl")
    return {"units": units, "wall_s": round(wall, 1), "measured_s": round(last - first, 1), "servers": rows,
            "candidates": len(candidates), "rejects": len(rejects)}


def bench_batch(work: Path, units: int, max_requests: int) -> dict:
    from batch_server import BatchServer

    def answer(body: dict) -> str:
        question, steps, edits = parse_prompt(body)
        full = valid_answer(question, steps)
        return json.dumps(as_edits(full, steps) if edits else full)

    def fails(custom_id: str, body: dict, submissions: int) -> bool:
        return submissions == 1 and int(custom_id[:8], 16) % 100 < 3

    server = BatchServer(answer, fails=fails, expire={1}).start()
    input_path = make_input(work / "batch.jsonl", units)
    try:
        started = time.monotonic()
        result = inject("run", "--category", CATEGORY, "--input", str(input_path), "--model", "openai/fake",
                        "--api-base", server.api_base, "--out", str(work / "batch-run"), "--batch",
                        "--batch-max-requests", str(max_requests), "--batch-poll-seconds", "0",
                        "--concurrency", str(units), "--cache", str(work / "batch-cache.sqlite"),
                        "--price-in", "1.25", "--price-out", "5", cwd=work)
        wall = time.monotonic() - started
    finally:
        server.stop()
    if result.returncode != 0:
        raise SystemExit(f"inject run --batch failed ({result.returncode}): {result.stderr[-2000:]}")
    candidates = lines(work / "batch-run" / "candidates.jsonl")
    rejects = lines(work / "batch-run" / "rejects.jsonl")
    times = Counter(custom_id for _, custom_id in server.submitted)
    resubmitted = {c for c, n in times.items() if n > 1}
    return {"units": units, "wall_s": round(wall, 1), "batches": len(server.batches),
            "lines_submitted": len(server.submitted), "distinct_requests": len(times),
            "failed_or_expired_lines": len(server.failed_lines),
            "resubmitted_equals_failed": resubmitted == set(server.failed_lines),
            "accounted": len({c["id"] for c in candidates} | {r["id"] for r in rejects}),
            "candidates": len(candidates), "rejects": len(rejects)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=["router", "batch"])
    parser.add_argument("--minutes", type=float, default=2.5, help="Router: units = (sum of limits) x minutes.")
    parser.add_argument("--units", type=int, default=2000, help="Batch: units.")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.only in (None, "router"):
            results["router"] = bench_router(work, (120, 60), args.minutes)
            print(json.dumps(results["router"], indent=2), flush=True)
        if args.only in (None, "batch"):
            results["batch"] = bench_batch(work, args.units, 400)
            print(json.dumps(results["batch"], indent=2), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
