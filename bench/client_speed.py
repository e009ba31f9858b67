"""Client speed: the whole `inject run` process through litellm and through the openai SDK, side by side.

For each client (`--client litellm` and `--client openai`; rounds interleave the order), against
bench/fake_provider.py in its own process, caches off, `--concurrency 64`:

  instant   2,000 requests, instant server: wall, requests/s, user+sys CPU of the whole process (and per request),
            start-up (process start -> the provider's first request), peak RSS
  latency   1,000 requests x 2.0 s server latency: wall / ideal (1,000 x 2.0 / 64 = 31.25 s), start-up included,
            and (last answer - first request) / ideal
  startup   1 trajectory, instant server: process start -> the provider's first request, and the CPU of the
            whole (short) process: start-up alone, 3 runs per round
  help      `inject --help`: median wall of 5

and prints one table with the openai/litellm ratio per measure.

    python bench/client_speed.py                       # both clients, 2 rounds (~6 min on 2 idle cores)
    python bench/client_speed.py --rounds 1 --only instant --json out.json
    python bench/client_speed.py --clients litellm     # one client
    python bench/client_speed.py --clients main,litellm,openai --baseline /tmp/main-export
        # "main": `inject run` without --client, importing the library from --baseline (a checkout or an export of
        # another commit, put first on PYTHONPATH), in the same rounds: before and after, side by side

CPU and peak RSS come from `os.wait4` on the `inject` process (its own rusage: user+sys seconds, ru_maxrss).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_provider import ProviderProcess  # noqa: E402
from run_loop import INJECT, account, inject_command, library_fingerprint, log, make_input, subprocess_env  # noqa: E402
from run_loop import unit_ids  # noqa: E402

CONCURRENCY = 64
BASELINE: str | None = None
"""--baseline: where the "main" client imports the library from."""


def run_measured(command: list[str], work: Path, name: str, client: str) -> dict[str, float]:
    """Run to completion; wall, user+sys CPU and peak RSS (MB) of that process alone (wait4's rusage)."""
    with (work / f"{name}.log").open("w") as log_file:
        start = time.monotonic()
        env = subprocess_env(work)
        if client == "main":
            env["PYTHONPATH"] = str(BASELINE)
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    return {"exit": process.returncode, "wall": wall, "start": start, "cpu": usage.ru_utime + usage.ru_stime,
            "user": usage.ru_utime, "sys": usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}


def client_args(client: str) -> list[str]:
    return [] if client in ("none", "main") else ["--client", client]


def instant(client: str, work: Path, input_path: Path, n: int, tag: str) -> dict[str, Any]:
    with ProviderProcess() as provider:
        out = work / f"instant-{client}-{tag}"
        command = inject_command(input_path, out, provider.api_base, "--no-cache", "--concurrency",
                                 str(CONCURRENCY), *client_args(client))
        result = run_measured(command, work, out.name, client)
        stats = provider.stats()
    counts = account(out, unit_ids(n))
    result.update(requests=stats["requests"], candidates=counts["candidates"], lost=counts["lost"],
                  startup=stats["first_request"] - result["start"] if stats["first_request"] else None)
    result["rps"] = stats["requests"] / result["wall"]
    result["cpu_ms_per_request"] = 1000 * result["cpu"] / max(1, stats["requests"])
    return result


def latency(client: str, work: Path, input_path: Path, n: int, tag: str, seconds: float = 2.0) -> dict[str, Any]:
    with ProviderProcess(latency=seconds) as provider:
        out = work / f"latency-{client}-{tag}"
        command = inject_command(input_path, out, provider.api_base, "--no-cache", "--concurrency",
                                 str(CONCURRENCY), *client_args(client))
        result = run_measured(command, work, out.name, client)
        stats = provider.stats()
    ideal = stats["requests"] * seconds / CONCURRENCY
    counts = account(out, unit_ids(n))
    result.update(requests=stats["requests"], candidates=counts["candidates"], ideal=ideal,
                  wall_over_ideal=result["wall"] / ideal,
                  startup=stats["first_request"] - result["start"],
                  serving_over_ideal=(stats["last_request"] + seconds - stats["first_request"]) / ideal)
    return result


def startup(client: str, work: Path, input_path: Path, n: int, tag: str) -> dict[str, Any]:
    """Start-up alone: the median of 3 runs on one trajectory (first request; CPU of the whole process)."""
    runs = []
    with ProviderProcess() as provider:
        for k in range(3):
            provider.reset()
            out = work / f"startup-{client}-{tag}-{k}"
            command = inject_command(input_path, out, provider.api_base, "--no-cache", *client_args(client))
            result = run_measured(command, work, out.name, client)
            result["startup"] = provider.stats()["first_request"] - result["start"]
            runs.append(result)
    return {"startup": statistics.median(r["startup"] for r in runs),
            "cpu": statistics.median(r["cpu"] for r in runs), "rss_mb": statistics.median(r["rss_mb"] for r in runs)}


def help_time(work: Path, baseline: str | None = None) -> float:
    env = subprocess_env(work)
    if baseline:
        env["PYTHONPATH"] = baseline
    times = []
    for _ in range(5):
        start = time.monotonic()
        subprocess.run([str(INJECT), "--help"], stdout=subprocess.DEVNULL, env=env, check=True)
        times.append(time.monotonic() - start)
    return statistics.median(times)


ROWS = [  # (scenario, key, label, format)
    ("instant", "rps", "instant, 2,000 req: requests/s, whole process", "{:.0f}"),
    ("instant", "wall", "instant: wall (s)", "{:.1f}"),
    ("instant", "cpu", "instant: user+sys CPU (s)", "{:.1f}"),
    ("instant", "cpu_ms_per_request", "instant: CPU per request (ms)", "{:.2f}"),
    ("instant", "startup", "instant: start-up to first request (s)", "{:.2f}"),
    ("instant", "rss_mb", "instant: peak RSS (MB)", "{:.0f}"),
    ("latency", "wall_over_ideal", "1,000 x 2.0 s: wall / ideal (31.25 s)", "{:.3f}"),
    ("latency", "serving_over_ideal", "1,000 x 2.0 s: (last answer - first request) / ideal", "{:.3f}"),
    ("latency", "startup", "1,000 x 2.0 s: start-up to first request (s)", "{:.2f}"),
    ("latency", "cpu", "1,000 x 2.0 s: user+sys CPU (s)", "{:.1f}"),
    ("latency", "rss_mb", "1,000 x 2.0 s: peak RSS (MB)", "{:.0f}"),
    ("startup", "startup", "1 trajectory: start-up to first request (s, median of 3)", "{:.2f}"),
    ("startup", "cpu", "1 trajectory: user+sys CPU of the process (s, median of 3)", "{:.2f}"),
]


def table(results: dict[str, dict[str, list[dict[str, Any]]]], clients: list[str]) -> str:
    """Medians over rounds (every round's value in brackets), and the ratio of the last client to the first."""
    head = "| measure | " + " | ".join(clients) + (f" | {clients[-1]} ÷ {clients[0]} |" if len(clients) > 1 else " |")
    lines = [head, "|---" * (len(clients) + 1 + (len(clients) > 1)) + "|"]
    for scenario, key, label, fmt in ROWS:
        cells, medians = [], []
        for client in clients:
            values = [r[key] for r in results.get(client, {}).get(scenario, []) if r.get(key) is not None]
            if not values:
                cells.append("")
                medians.append(None)
                continue
            median = statistics.median(values)
            medians.append(median)
            cells.append(f"**{fmt.format(median)}** (" + ", ".join(fmt.format(v) for v in values) + ")"
                         if len(values) > 1 else fmt.format(median))
        ratio = (f" {medians[-1] / medians[0]:.2f} |" if len(clients) > 1 and medians[0] and medians[-1] is not None
                 else " |" if len(clients) > 1 else "")
        lines.append(f"| {label} | " + " | ".join(cells) + " |" + ratio)
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="litellm,openai",
                        help="comma-separated: litellm, openai, auto, none (no --client), main (see --baseline)")
    parser.add_argument("--baseline", help="the library the `main` client imports (a checkout's root)")
    parser.add_argument("--only", default="instant,latency,startup,help", help="comma-separated scenarios")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--instant-n", type=int, default=2000)
    parser.add_argument("--latency-n", type=int, default=1000)
    parser.add_argument("--json", help="write every measurement here")
    args = parser.parse_args()
    global BASELINE
    BASELINE = args.baseline
    if "main" in args.clients.split(",") and not args.baseline:
        parser.error("--clients main needs --baseline")
    clients = args.clients.split(",")
    only = set(args.only.split(","))
    fingerprint = library_fingerprint()
    results: dict[str, dict[str, list[dict[str, Any]]]] = {client: {} for client in clients}
    with tempfile.TemporaryDirectory(prefix="client-speed-") as tmp:
        work = Path(tmp)
        instant_input = make_input(work / "instant.jsonl", args.instant_n)
        latency_input = make_input(work / "latency.jsonl", args.latency_n)
        startup_input = make_input(work / "startup.jsonl", 1)
        help_seconds = help_time(work) if "help" in only else None
        baseline_help = help_time(work, BASELINE) if "help" in only and "main" in clients else None
        for k in range(args.rounds):
            order = clients if k % 2 == 0 else list(reversed(clients))
            for scenario, function, path, n in (("instant", instant, instant_input, args.instant_n),
                                                 ("latency", latency, latency_input, args.latency_n),
                                                 ("startup", startup, startup_input, 1)):
                if scenario not in only:
                    continue
                for client in order:
                    result = function(client, work, path, n, str(k))
                    results[client].setdefault(scenario, []).append(result)
                    log(f"round {k + 1} {scenario} {client}: " + ", ".join(
                        f"{key} {value:.3f}" if isinstance(value, float) else f"{key} {value}"
                        for key, value in result.items() if key != "start"))
    print(table(results, clients))
    if help_seconds is not None:
        print(f"\n`inject --help`: median of 5 = {help_seconds:.3f} s"
              + (f" (main, --baseline: {baseline_help:.3f} s)" if baseline_help is not None else ""))
    print(f"\nlibrary fingerprint {fingerprint} (after: {library_fingerprint()}); load average "
          f"{os.getloadavg()[0]:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "help_seconds": help_seconds,
                                               "baseline_help_seconds": baseline_help,
                                               "fingerprint": fingerprint}, indent=2))


if __name__ == "__main__":
    main()
