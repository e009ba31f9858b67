"""The toolkit beside its peers: `inject run`, curator, distilabel and data-designer, side by side in one
run, against bench/fake_provider.py, with the same prompts (the toolkit's own, rendered by its Python API),
concurrency 64 and every cache off; whole processes timed.

Workloads, per tool, in every round:

  instant   2,000 requests, the server answers at once: requests/s of the whole process, client CPU (user+sys,
            the process and all its children), peak RSS of the largest process, and the peak sum of proportional
            set sizes over its process tree (PSS: pages that forked workers share with their parent count once)
  latency   1,000 requests, 2.0 s each: wall / ideal (1,000 x 2.0 s / 64 = 31.25 s), and (last answer - first
            request) / ideal
  imports   `python -c "<the tool's imports>"`, whole process
  start-up  time to first request: process start -> the provider's first request (from the instant workload)

Rounds alternate the order of the tools (round 1 as listed, round 2 reversed, ...), so no tool always runs on the
machine warmed or loaded by the same neighbour. The tables give each measure's range over the rounds, then each
peer's figure over inject's in the same round (the ratios are what count on a shared machine).

Also `inject run --workers 2` beside `--workers 1`, on the instant workload and on the offline engine.

Each peer runs in its own virtual environment under the bench cache directory (default
~/.cache/prm-injector/bench-peers; created and installed here with pip on first use, never a project dependency); a
peer that fails to install is skipped, and the report says so. The peers only collect answers; `inject run` also
parses and validates every one (and sends the JSON-schema response_format, which the peers do not).

    python bench/peers.py                          # everything, two rounds (~25 min on 2 shared cores)
    python bench/peers.py --quick                  # small sizes, one round: a smoke run (ratios not meaningful)
    python bench/peers.py --tools inject,curator --rounds 1 --json peers.json
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from fake_provider import ProviderProcess  # noqa: E402
from run_loop import OFFLINE_ENV, library_fingerprint, make_input  # noqa: E402

CLIENTS = BENCH / "peer_clients"
CATEGORY = "counterfactual"
MODEL = "openai/bench"


@dataclass(frozen=True)
class Peer:
    name: str
    requirements: tuple[str, ...]
    """What pip installs into the peer's own virtual environment."""
    version_of: str
    """The distribution whose version the report names."""
    client: str
    """Its script in bench/peer_clients/."""
    imports: str


PEERS = {
    "curator": Peer("curator", ("bespokelabs-curator==0.1.31",), "bespokelabs-curator", "curator_client.py",
                    "from bespokelabs import curator"),
    # distilabel's wheel does not declare `requests`, which it imports; its OpenAILLM needs `openai` (an extra).
    "distilabel": Peer("distilabel", ("distilabel==1.5.3", "requests", "openai"), "distilabel", "distilabel_client.py",
                       "from distilabel.models import OpenAILLM; from distilabel.pipeline import Pipeline; "
                       "from distilabel.steps import LoadDataFromDicts; "
                       "from distilabel.steps.tasks import ChatGeneration"),
    "data-designer": Peer("data-designer", ("data-designer==0.9.7",), "data-designer", "data_designer_client.py",
                          "import data_designer.config as dd; from data_designer.interface import DataDesigner"),
}
TOOLS = ["inject", *PEERS]
INJECT_IMPORTS = ("import injector.cli.commands, injector.runner.loop, injector.runner.executors.processes, injector.engines.openai_client, openai")
"""What `inject run --model openai/...` imports before its first request (the openai SDK path; litellm is not
imported there)."""


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------- environments

def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "prm-injector" / "bench-peers"


def venv_python(cache_dir: Path, peer: Peer) -> Path:
    return cache_dir / peer.name / "bin" / "python"


def installed_version(python: Path, distribution: str) -> str | None:
    if not python.exists():
        return None
    probe = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({distribution!r}))"],
                           capture_output=True, text=True)
    return probe.stdout.strip() if probe.returncode == 0 else None


def ensure_peer(cache_dir: Path, peer: Peer, install: bool) -> tuple[Path | None, str]:
    """The peer's interpreter and version, installing it into its own virtual environment when missing; (None,
    why) when it cannot be had."""
    python = venv_python(cache_dir, peer)
    home = python.parent.parent
    marker = home / "bench-requirements.txt"  # what was installed there, so a changed list reinstalls
    version = installed_version(python, peer.version_of)
    if version is not None and marker.exists() and marker.read_text() == "\n".join(peer.requirements):
        return python, version
    if not install:
        return None, f"not installed in {python.parent.parent} (run without --no-install)"
    log(f"installing {' '.join(peer.requirements)} into {home} (once)")
    shutil.rmtree(home, ignore_errors=True)
    home.parent.mkdir(parents=True, exist_ok=True)
    logfile = cache_dir / f"{peer.name}.install.log"
    with logfile.open("w") as out:
        made = subprocess.run([sys.executable, "-m", "venv", str(home)], stdout=out, stderr=subprocess.STDOUT)
        if made.returncode == 0:
            made = subprocess.run([str(python), "-m", "pip", "install", "-q", *peer.requirements], stdout=out,
                                  stderr=subprocess.STDOUT)
    version = installed_version(python, peer.version_of)
    if made.returncode != 0 or version is None:
        return None, f"pip install {' '.join(peer.requirements)} failed (see {logfile})"
    marker.write_text("\n".join(peer.requirements))
    return python, version


def tiktoken_dir(python: Path) -> str | None:
    """The tiktoken files inside a litellm wheel (curator and data-designer would download cl100k_base at start-up)."""
    probe = subprocess.run([str(python), "-c", "import importlib.util as u, os; s = u.find_spec('litellm'); "
                            "print(os.path.join(os.path.dirname(s.origin), 'litellm_core_utils', 'tokenizers') "
                            "if s else '')"], capture_output=True, text=True)
    path = probe.stdout.strip()
    return path if path and Path(path).is_dir() else None


def tool_env(work: Path, tiktoken: str | None) -> dict[str, str]:
    env = {**os.environ, **OFFLINE_ENV, "XDG_CACHE_HOME": str(work / "xdg-cache"), "OPENAI_API_KEY": "x",
           "TELEMETRY_ENABLED": "false", "NEMO_TELEMETRY_ENABLED": "false", "DO_NOT_TRACK": "1",
           "CURATOR_DISABLE_CACHE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "TOKENIZERS_PARALLELISM": "false"}
    if tiktoken:
        env["TIKTOKEN_CACHE_DIR"] = tiktoken
    return env


# --------------------------------------------------------------------------------------------- inputs

def write_prompts(input_path: Path, out: Path) -> int:
    """The toolkit's own rendered prompt of every unit of `input_path`, one `{"messages": [...]}` per line."""
    from injector import Taxonomy, load_trajectories, render_messages
    from injector.answer.contract import DEFAULT_OUTPUT_MODE, answer_mode

    taxonomy = Taxonomy.load()
    category = taxonomy.select([CATEGORY])[0]
    mode = answer_mode(category, DEFAULT_OUTPUT_MODE)
    count = 0
    with out.open("w", encoding="utf-8") as handle:
        for trajectory in load_trajectories(str(input_path), "trajectories"):
            messages = render_messages(taxonomy, category, trajectory, output_mode=mode, attach_images=False)
            handle.write(json.dumps({"messages": messages}, ensure_ascii=False) + "\n")
            count += 1
    return count


# --------------------------------------------------------------------------------------------- measuring

@dataclass
class Measured:
    exit_code: int
    wall: float
    started: float
    """time.monotonic() at the start (the provider's clock is the same on this machine)."""
    cpu: float
    """User + system seconds of the process and every child it waited for."""
    peak_rss_mb: float
    """The largest single process of the tree."""
    peak_tree_pss_mb: float
    """The largest sum of proportional set sizes over the process tree, sampled every 0.25 s."""
    output: str = ""


def _tree(pid: int) -> list[int]:
    pids, todo = [], [pid]
    while todo:
        current = todo.pop()
        pids.append(current)
        try:
            todo += [int(c) for c in Path(f"/proc/{current}/task/{current}/children").read_text().split()]
        except OSError:
            pass
    return pids


def _pss_kb(pid: int) -> int:
    """The process's proportional set size (its shared pages divided among their sharers: forked workers share
    most of their memory with their parent), else its RSS."""
    for name, key in (("smaps_rollup", "Pss:"), ("status", "VmRSS:")):
        try:
            for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
                if line.startswith(key):
                    return int(line.split()[1])
        except OSError:
            pass
    return 0


def measure(command: list[str], env: dict[str, str], cwd: Path, timeout: float = 1800) -> Measured:
    """Run `command` to its end; wall, CPU (wait4: the process and its waited-for descendants), peak RSS."""
    log_path = cwd / "output.log"
    peak_tree = [0]
    with log_path.open("w") as log_file:
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env, cwd=cwd)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.25):
                peak_tree[0] = max(peak_tree[0], sum(_pss_kb(pid) for pid in _tree(process.pid)))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                process.kill()
            time.sleep(0.02)
        wall = time.monotonic() - started
        done.set()
        sampler.join()
        process.returncode = os.waitstatus_to_exitcode(status)
    return Measured(process.returncode, wall, started, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,
                    peak_tree[0] / 1024, log_path.read_text(errors="replace")[-2000:])


@dataclass
class Tool:
    name: str
    python: Path
    version: str
    env: dict[str, str]
    imports: str

    def command(self, kind: str, input_path: Path, prompts: Path, api_base: str, out: Path, concurrency: int,
                *extra: str) -> list[str]:
        if self.name.startswith("inject"):
            model = ["--model", MODEL, "--api-base", api_base, "--no-cache", "--category", CATEGORY]
            if kind == "offline":  # every category the offline engine makes, on PRMBench's sources
                model = ["--model", "offline", "--category", "all"]
            return [str(Path(self.python).parent / "inject"), "run", "--input", str(input_path), "--input-format",
                    "trajectories", *model, "--out", str(out / "run"), "--concurrency", str(concurrency), *extra]
        client = CLIENTS / PEERS[self.name].client
        return [str(self.python), str(client), "--api-base", api_base, "--prompts", str(prompts), "--concurrency",
                str(concurrency), "--work", str(out)]


@dataclass
class Results:
    """measure -> tool -> one value per round."""

    values: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)
    offline_units: int | None = None

    def add(self, measure_name: str, tool: str, value: float) -> None:
        self.values.setdefault(measure_name, {}).setdefault(tool, []).append(value)


def count_answers(tool: str, out: Path, output: str) -> int | None:
    if tool.startswith("inject"):
        total = 0
        for name in ("candidates.jsonl", "rejects.jsonl"):
            path = out / "run" / name
            total += path.read_bytes().count(b"\n") if path.exists() else 0
        return total
    for line in reversed(output.splitlines()):
        if line.startswith('{"answers"'):
            return int(json.loads(line)["answers"])
    return None


def run_workload(results: Results, tool: Tool, kind: str, provider: ProviderProcess, input_path: Path,
                 prompts: Path, requests: int, concurrency: int, latency: float, work: Path, label: str,
                 *extra: str) -> None:
    out = Path(tempfile.mkdtemp(prefix=f"{label}-{kind}-", dir=work))
    if kind != "offline":
        provider.configure(latency=latency, reset=True)
    measured = measure(tool.command(kind, input_path, prompts, provider.api_base, out, concurrency, *extra),
                       tool.env, out)
    answers = count_answers(tool.name, out, measured.output)
    stats = provider.stats() if kind != "offline" else {}
    record = {"tool": label, "workload": kind, "exit": measured.exit_code, "wall": measured.wall,
              "cpu": measured.cpu, "peak_rss_mb": measured.peak_rss_mb, "tree_pss_mb": measured.peak_tree_pss_mb,
              "answers": answers, "requests": stats.get("requests"), "probes": stats.get("counts", {}).get("probe")}
    if kind == "offline":  # units: as many as the first run made (the --workers runs must make as many)
        requests = results.offline_units = results.offline_units or answers or -1
    ok = measured.exit_code == 0 and answers == requests
    if kind != "offline":
        ok = ok and stats["requests"] == requests
    if not ok:
        results.notes.append(f"{label} {kind}: exit {measured.exit_code}, {answers} answers, "
                             f"{stats.get('requests')} requests of {requests}: {measured.output[-300:]!r}")
        log(f"  {label} {kind}: FAILED ({results.notes[-1][:300]})")
        record["failed"] = True
        results.runs.append(record)
        shutil.rmtree(out, ignore_errors=True)
        return
    if kind == "instant":
        results.add("instant: requests/s, whole process", label, requests / measured.wall)
        results.add("instant: client CPU, user+sys (s)", label, measured.cpu)
        results.add("instant: CPU per request (ms)", label, 1000 * measured.cpu / requests)
        results.add("instant: peak RSS, largest process (MB)", label, measured.peak_rss_mb)
        results.add("instant: peak memory of the process tree, PSS (MB)", label, measured.peak_tree_pss_mb)
        results.add("time to first request (s)", label, stats["first_request"] - measured.started)
    elif kind == "latency":
        ideal = requests * latency / concurrency
        results.add(f"latency: wall / ideal ({ideal:g} s)", label, measured.wall / ideal)
        serving = max(stats["ok_times"]) - stats["first_request"]
        results.add("latency: (last answer - first request) / ideal", label, serving / ideal)
    else:
        results.add("offline engine: units/s, whole process", label, requests / measured.wall)
        results.add("offline engine: CPU, user+sys (s)", label, measured.cpu)
    record.update({"first_request": stats.get("first_request", 0) - measured.started if stats else None})
    results.runs.append(record)
    log(f"  {label} {kind}: {measured.wall:.1f} s wall, {measured.cpu:.1f} s CPU, {measured.peak_rss_mb:.0f} MB")
    shutil.rmtree(out, ignore_errors=True)


def time_imports(results: Results, tool: Tool, work: Path, label: str) -> None:
    measured = measure([str(tool.python), "-c", tool.imports], tool.env, work)
    if measured.exit_code == 0:
        results.add("imports alone (s)", label, measured.wall)
    else:
        results.notes.append(f"{label} imports failed: {measured.output[-300:]!r}")


# --------------------------------------------------------------------------------------------- report

def fmt(values: list[float]) -> str:
    if not values:
        return "–"
    digits = 0 if max(values) >= 100 else 1 if max(values) >= 10 else 2
    low, high = min(values), max(values)
    low_text, high_text = f"{low:.{digits}f}", f"{high:.{digits}f}"
    return low_text if low_text == high_text else f"{low_text}–{high_text}"


def tables(results: Results, columns: list[str]) -> str:
    lines = ["| measure | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for name, by_tool in results.values.items():
        lines.append(f"| {name} | " + " | ".join(fmt(by_tool.get(c, [])) for c in columns) + " |")
    peers = [c for c in columns if c != "inject"]
    lines += ["", "Each tool's figure over inject's, in the same round (range over the rounds):", "",
              "| measure | " + " | ".join(f"{c} ÷ inject" for c in peers) + " |", "|---|" + "---|" * len(peers)]
    for name, by_tool in results.values.items():
        base = by_tool.get("inject", [])
        cells = []
        for peer in peers:
            ratios = [v / b for v, b in zip(by_tool.get(peer, []), base) if b]
            cells.append(fmt(ratios))
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def machine() -> str:
    load = os.getloadavg()
    return (f"{os.cpu_count()} cores ({platform.machine()}), Python {platform.python_version()}, load average "
            f"{load[0]:.1f} at the end")


def commit() -> str:
    probe = subprocess.run(["git", "-C", str(BENCH.parent), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True)
    return probe.stdout.strip() or "unknown"


# --------------------------------------------------------------------------------------------- main

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default=",".join(TOOLS),
                        help=f"comma-separated, in round-1 order (default {','.join(TOOLS)})")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--instant", type=int, default=2000, help="requests of the instant workload")
    parser.add_argument("--latency-requests", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=2.0, help="seconds per answer in the latency workload")
    parser.add_argument("--offline", type=int, default=600,
                        help="units of the offline-engine workload (PRMBench sources x its 6 categories)")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--workers", type=int, default=2, help="inject --workers N beside --workers 1 (1: skip)")
    parser.add_argument("--cache-dir", type=Path, default=None, help="the peers' virtual environments")
    parser.add_argument("--no-install", action="store_true", help="skip a peer that is not installed yet")
    parser.add_argument("--quick", action="store_true", help="small sizes, one round (a smoke run)")
    parser.add_argument("--json", type=Path, help="also write every figure here")
    args = parser.parse_args(argv)
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = [t for t in tools if t not in TOOLS]
    if unknown:
        parser.error(f"unknown tool(s) {', '.join(unknown)}; choose from {', '.join(TOOLS)}")
    if args.rounds < 1 or args.concurrency < 1 or args.workers < 1:
        parser.error("--rounds, --concurrency and --workers must be at least 1")
    args.tools = tools
    if args.quick:
        args.instant, args.latency_requests, args.offline, args.rounds = 200, 128, 60, 1
    args.cache_dir = args.cache_dir or default_cache_dir()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results = Results()
    work = Path(tempfile.mkdtemp(prefix="peers-"))
    try:
        return _main(args, results, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _main(args: argparse.Namespace, results: Results, work: Path) -> int:
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    fingerprint = library_fingerprint()
    own_tiktoken = tiktoken_dir(Path(sys.executable))
    tools: dict[str, Tool] = {}
    versions: dict[str, str] = {}
    for name in args.tools:
        if name == "inject":
            from injector.util.version import __version__

            tools[name] = Tool(name, Path(sys.executable), __version__, tool_env(work, own_tiktoken), INJECT_IMPORTS)
            versions[name] = __version__
            continue
        peer = PEERS[name]
        python, version = ensure_peer(args.cache_dir, peer, install=not args.no_install)
        if python is None:
            results.notes.append(f"{name} skipped: {version}")
            log(f"{name} skipped: {version}")
            continue
        tools[name] = Tool(name, python, version, tool_env(work, tiktoken_dir(python) or own_tiktoken), peer.imports)
        versions[name] = version
    instant_input = make_input(work / "instant.jsonl", args.instant)
    latency_input = make_input(work / "latency.jsonl", args.latency_requests)
    offline_input = BENCH / "data" / "train-p1-originals.jsonl"  # PRMBench's sources (see bench/data/ATTRIBUTION.md)
    offline_limit = ["--limit", str(max(1, args.offline // 6))]  # the offline engine makes 6 categories
    instant_prompts, latency_prompts = work / "instant-prompts.jsonl", work / "latency-prompts.jsonl"
    write_prompts(instant_input, instant_prompts)
    write_prompts(latency_input, latency_prompts)
    workers_label = f"inject --workers {args.workers}"
    columns = [t for t in args.tools if t in tools]
    if "inject" in tools and args.workers > 1:
        columns.append(workers_label)
    with ProviderProcess() as provider:
        for round_number in range(args.rounds):
            order = list(tools) if round_number % 2 == 0 else list(reversed(tools))
            log(f"round {round_number + 1}: {', '.join(order)}")
            for name in order:
                tool = tools[name]
                time_imports(results, tool, work, name)
                run_workload(results, tool, "instant", provider, instant_input, instant_prompts, args.instant,
                             args.concurrency, 0.0, work, name)
                run_workload(results, tool, "latency", provider, latency_input, latency_prompts,
                             args.latency_requests, args.concurrency, args.latency, work, name)
                if name == "inject" and args.workers > 1:
                    run_workload(results, tool, "instant", provider, instant_input, instant_prompts, args.instant,
                                 args.concurrency, 0.0, work, workers_label, "--workers", str(args.workers))
                    for label, extra in (("inject", ()), (workers_label, ("--workers", str(args.workers)))):
                        run_workload(results, tool, "offline", provider, offline_input, instant_prompts,
                                     args.offline, 16, 0.0, work, label, *offline_limit, *extra)
    report = "\n".join([
        f"peers bench, {started}; machine: {machine()}; commit {commit()} (library {fingerprint})",
        "versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()),
        f"sizes: instant {args.instant}, latency {args.latency_requests} x {args.latency:g} s, offline "
        f"{args.offline}; concurrency {args.concurrency}; rounds {args.rounds}", "",
        tables(results, columns), "", *(f"note: {n}" for n in results.notes)])
    print(report)
    if args.json:
        args.json.write_text(json.dumps({"started": started, "machine": machine(), "commit": commit(),
                                         "library": fingerprint, "versions": versions, "values": results.values,
                                         "notes": results.notes, "runs": results.runs}, indent=2))
    return 0 if not any(run.get("failed") for run in results.runs) else 1


if __name__ == "__main__":
    sys.exit(main())
