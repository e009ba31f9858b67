"""Run-loop benchmarks: the LLM path of `inject run` against a fake provider on 127.0.0.1.

Six scenarios, each measured against its goal; one table at the end (PASS/MISS):

  1 latency   1,000 trajectories, 2.0 s server latency, --concurrency 64: wall time of the whole `inject run`
              command over the ideal (requests x latency / concurrency).                          goal <= 1.15
  2 overhead  instant server: candidates/s of `injector.run(...)` (in-process, in a worker subprocess) over a bare
              `litellm.acompletion` loop (same requests, concurrency, server; max_retries=0), rounds interleaved.
                                                                                                   goal >= 0.8
  3 rpm       the server allows 300 requests per minute (sliding window, 429 + Retry-After beyond); `--rpm 300`:
              achieved rate / 300, and failed items.                                   goal >= 0.9 and 0 failed
  4 faults    10% 429, 5% 500, 2% timeouts (hang > --timeout 2), 5% malformed JSON: every unit id in exactly one
              of candidates.jsonl / rejects.jsonl.                                                  goal: all
  5 rerun     a finished 10,000-item run started again (same --out): requests sent (goal 0) and wall times; also
              the cache path (new --out, same --cache).
  6 kill      SIGKILL at random points, ten times, resuming each time: duplicates, lost items, unreadable lines
              (goal 0 each).

    python bench/run_loop.py                 # everything (~12 min on 2 cores)
    python bench/run_loop.py --quick         # smaller sizes, a smoke run (~4 min; ratios are not meaningful)
    python bench/run_loop.py --only 1,3 --json results.json

The provider is bench/fake_provider.py in its own process. `inject` runs as a subprocess from this interpreter's
bin directory, with litellm kept offline and the request cache in a temporary directory.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OFFLINE_ENV = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1",
               "HF_DATASETS_OFFLINE": "1"}
os.environ.update(OFFLINE_ENV)
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_provider import ProviderProcess, measure_capacity  # noqa: E402

BENCH = Path(__file__).resolve()
ROUNDS = 3  # scenario 2's interleaved rounds (--rounds)
INJECT = Path(sys.executable).parent / "inject"
MODEL = "openai/bench"
CATEGORY = "counterfactual"


def library_fingerprint() -> str:
    """Hash of the library's code, prompts and taxonomy: other people edit them while benchmarks run."""
    import hashlib

    root = BENCH.parent.parent
    digest = hashlib.sha256()
    files = sorted([*(root / "injector").rglob("*.py"), *(root / "prompts").glob("*.j2"), root / "taxonomy.yaml"])
    for path in files:
        if path.exists():
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------- helpers

def make_input(path: Path, n: int) -> Path:
    """N distinct trajectories in the `trajectories` JSONL format (3 or 4 steps, numbers in every step)."""
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            a, b, c = 10 + i, 3 + i % 17, 2 + i % 5
            steps = [f"Tom starts with ${a}$ apples.", f"He buys ${b}$ more, so he has ${a} + {b} = {a + b}$ apples."]
            total = a + b
            if i % 2:
                steps.append(f"He then eats ${c}$, leaving ${total} - {c} = {total - c}$ apples.")
                total -= c
            steps.append(f"So the answer is {total}.\n\n# Answer\n\n{total}")
            question = (f"Tom has {a} apples and buys {b} more." + (f" He eats {c}." if i % 2 else "")
                        + " How many apples does he have now?")
            record = {"id": f"b{i:06d}", "question": question, "steps": steps, "answer": str(total)}
            out.write(json.dumps(record) + "\n")
    return path


def unit_ids(n: int) -> set[str]:
    return {f"b{i:06d}::{CATEGORY}::0" for i in range(n)}


def inject_command(input_path: Path, out: Path, api_base: str, *extra: str) -> list[str]:
    return [str(INJECT), "run", "--category", CATEGORY, "--input", str(input_path), "--input-format", "trajectories",
            "--model", MODEL, "--api-base", api_base, "--out", str(out), *extra]


def subprocess_env(work: Path) -> dict[str, str]:
    return {**os.environ, **OFFLINE_ENV, "XDG_CACHE_HOME": str(work / "xdg-cache")}


def run_timed(command: list[str], work: Path, name: str) -> tuple[int, float, float]:
    """Run to completion; (exit code, wall seconds, monotonic start). Output goes to WORK/NAME.log."""
    with (work / f"{name}.log").open("w") as log_file:
        start = time.monotonic()
        code = subprocess.run(command, stdout=log_file, stderr=subprocess.STDOUT, env=subprocess_env(work)).returncode
        return code, time.monotonic() - start, start


def read_run_dir(out: Path) -> dict[str, Any]:
    """Every line of candidates.jsonl and rejects.jsonl: ids, unreadable lines, duplicates, codes."""
    result: dict[str, Any] = {"unreadable": 0, "torn_tail": 0}
    for name in ("candidates", "rejects"):
        path = out / f"{name}.jsonl"
        ids: list[str] = []
        codes: dict[str, int] = {}
        data = path.read_bytes() if path.exists() else b""
        if data and not data.endswith(b"\n"):
            result["torn_tail"] += 1
        for line in data.splitlines():
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                result["unreadable"] += 1
                continue
            ids.append(record["id"])
            for code in record.get("codes", []):
                codes[code] = codes.get(code, 0) + 1
        result[name] = ids
        result[f"{name}_codes"] = codes
    return result


def account(out: Path, units: set[str]) -> dict[str, Any]:
    files = read_run_dir(out)
    candidates, rejects = files["candidates"], files["rejects"]
    seen = set(candidates) | set(rejects)
    return {
        "units": len(units), "candidates": len(set(candidates)), "rejects": len(set(rejects)),
        "lines": len(candidates) + len(rejects),
        "duplicates": (len(candidates) - len(set(candidates))) + (len(rejects) - len(set(rejects)))
                      + len(set(candidates) & set(rejects)),
        "lost": len(units - seen), "unknown": len(seen - units), "unreadable": files["unreadable"],
        "torn_tail": files["torn_tail"], "reject_codes": files["rejects_codes"],
    }


@dataclass
class Row:
    scenario: str
    measure: str
    goal: str
    value: str
    passed: bool | None  # None: informational

    @property
    def verdict(self) -> str:
        return "" if self.passed is None else ("PASS" if self.passed else "MISS")


@dataclass
class Report:
    rows: list[Row] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def add(self, *args: Any) -> None:
        self.rows.append(Row(*args))
        row = self.rows[-1]
        log(f"  {row.scenario}: {row.measure} = {row.value} (goal {row.goal}) {row.verdict}")


# --------------------------------------------------------------------------------------------- scenario 1

def scenario_latency(report: Report, work: Path, quick: bool) -> None:
    n, latency, concurrency = (256 if quick else 1000), 2.0, 64
    log(f"1 latency: {n} trajectories, server latency {latency} s, --concurrency {concurrency}")
    input_path = make_input(work / "s1.jsonl", n)
    with ProviderProcess(latency=latency) as provider:
        command = inject_command(input_path, work / "s1-run", provider.api_base, "--no-cache",
                                 "--concurrency", str(concurrency))
        code, wall, started = run_timed(command, work, "s1")
        stats = provider.stats()
        # The same command against a provider whose latency spreads (uniform 1.5-2.5 s, same mean): a constant
        # latency keeps the 64 requests in lock-step waves, whose answers all arrive, and queue, together.
        provider.configure(jitter=0.5, reset=True)
        _, jitter_wall, jitter_started = run_timed(
            inject_command(input_path, work / "s1-jitter", provider.api_base, "--no-cache",
                           "--concurrency", str(concurrency)), work, "s1-jitter")
        jitter_stats = provider.stats()
        provider.configure(jitter=0.0)
        # Where the time goes: the same work in-process (no interpreter start, no litellm import), through run()
        # and through a bare litellm loop.
        inner = {}
        for kind in ("run", "bare"):
            provider.reset()
            inner[kind] = run_worker(kind, provider.api_base, input_path, concurrency, work / f"s1-inner-{kind}",
                                     work)
            inner[kind]["requests"] = provider.stats()["requests"]
            log(f"  in-process {kind}: {inner[kind]['done']} in {inner[kind]['seconds']:.1f} s")
    requests = stats["requests"]
    ideal = requests * latency / concurrency
    startup = stats["first_request"] - started
    serving = stats["last_request"] + latency - stats["first_request"]
    counts = account(work / "s1-run", unit_ids(n))
    report.details["1"] = {"n": n, "exit": code, "wall": wall, "requests": requests, "ideal": ideal,
                           "startup_to_first_request": startup, "first_to_last_answer": serving,
                           "peak_in_flight": stats["peak_in_flight"], "accounting": counts, "command": command,
                           "in_process": inner, "jitter_wall": jitter_wall,
                           "jitter_requests": jitter_stats["requests"],
                           "jitter_startup": jitter_stats["first_request"] - jitter_started}
    report.add("1 latency", "wall / ideal (requests x 2.0 s / 64)", "<= 1.15", f"{wall / ideal:.3f}",
               code == 0 and counts["candidates"] == n and wall / ideal <= 1.15)
    report.add("1 latency", "  of which: first request -> last answer / ideal", "", f"{serving / ideal:.3f}", None)
    report.add("1 latency", "  wall, ideal, startup (s); peak in flight", "",
               f"{wall:.1f}, {ideal:.1f}, {startup:.1f}; {stats['peak_in_flight']}", None)
    jitter_ideal = jitter_stats["requests"] * latency / concurrency
    report.add("1 latency", "  latency 2.0 +- 0.5 s: wall / ideal (startup s)", "",
               f"{jitter_wall / jitter_ideal:.3f} ({jitter_stats['first_request'] - jitter_started:.1f})", None)
    for kind, label in (("run", "in-process run() (no start-up) / ideal"), ("bare", "bare litellm loop / ideal")):
        ideal_k = inner[kind]["requests"] * latency / concurrency
        report.add("1 latency", f"  {label}", "", f"{inner[kind]['seconds'] / ideal_k:.3f}", None)


# --------------------------------------------------------------------------------------------- scenario 2

def worker(kind: str, api_base: str, input_path: str, concurrency: int, out: str) -> None:
    """One timed measurement in a fresh interpreter; prints {"kind", "seconds", "done"} as JSON."""
    import asyncio

    from injector import IterableInput, LLMEngine, RunSpec, Taxonomy, load_trajectories, render_messages, run
    from injector.answer.contract import response_schema
    from injector.engines.llm import import_litellm
    from injector.answer.contract import DEFAULT_OUTPUT_MODE

    mode = DEFAULT_OUTPUT_MODE  # what `inject run` uses unless told otherwise

    taxonomy = Taxonomy.load()
    categories = taxonomy.select([CATEGORY])
    trajectories = list(load_trajectories(input_path, "trajectories"))
    # Through litellm, like the bare loop it is compared with (auto would take the openai SDK path for openai/).
    engine = LLMEngine(MODEL, api_base=api_base, cache=None, client="litellm")
    engine.check_ready()
    litellm = import_litellm()
    if kind == "bare":
        schema = response_schema(multi_solution=False, edits=mode == "edits")
        # The exact payloads the pipeline sends, rendered before the clock starts.
        requests = [engine.request(render_messages(taxonomy, categories[0], t, output_mode=mode), 0, schema,
                                   f"{CATEGORY}_answer") for t in trajectories]

        async def bare() -> int:
            pending = iter(requests)
            done = 0

            async def one_worker() -> None:
                nonlocal done
                for request in pending:
                    response = await litellm.acompletion(**request, api_key="sk-no-key-needed", timeout=300,
                                                         max_retries=0, num_retries=0)
                    done += bool(response.choices[0].message.content)

            await asyncio.gather(*(one_worker() for _ in range(concurrency)))
            return done

        start = time.perf_counter()
        done = asyncio.run(bare())
        seconds = time.perf_counter() - start
    else:
        if kind == "run-fixed":
            patch_suggested_fixes()
        start = time.perf_counter()
        spec = RunSpec(taxonomy=taxonomy, categories=categories, out=out, concurrency=concurrency, output_mode=mode)
        result = run(IterableInput(trajectories, identity={"input": "bench"}), spec, engine, command=["bench"])
        seconds = time.perf_counter() - start
        done = result.manifest.counts.candidates
    print(json.dumps({"kind": kind, "seconds": seconds, "done": done}))


def patch_suggested_fixes() -> None:
    """What-if, for the report only (never counted as a PASS): three per-unit costs of the library removed the way
    RESULTS.md suggests, to measure what fixing them would give.

    - `LLMEngine._cost` calls `litellm.completion_cost()` on every response (~1 ms of CPU, an exception inside
      litellm for unpriced models) although litellm already computed the same cost into
      `response._hidden_params["response_cost"]`; take that one.
    - `response_schema()` deep-copies the schema for every unit; build it once per form.
    - `_complete_with_retries` builds tenacity's AsyncRetrying (and a backoff object and closures) for every
      request, ~10% of a bare litellm call's CPU; call once directly and enter the retry loop only after a
      transient fault (here it then makes up to `transient_attempts` further attempts: fine for a what-if on a
      fault-free server, not a drop-in patch).
    """
    import functools

    import injector.inject.unit
    from injector.engines.base import TransientProviderError
    from injector.engines.llm import LLMEngine

    original_retries = LLMEngine._complete_with_retries

    async def complete(self, request):
        try:
            return await self._complete_once(request)
        except TransientProviderError:
            self.retries += 1
            return await original_retries(self, request)

    LLMEngine._complete_with_retries = complete

    original_cost = LLMEngine._cost

    def cost(self, litellm, response, usage):
        if self.price_in is not None and self.price_out is not None:
            return original_cost(self, litellm, response, usage)
        value = (getattr(response, "_hidden_params", None) or {}).get("response_cost")
        return float(value) if value is not None else None

    LLMEngine._cost = cost
    injector.inject.unit.response_schema = functools.lru_cache(maxsize=8)(injector.inject.unit.response_schema)


def stage_costs(input_path: Path, work: Path) -> dict[str, float]:
    """Microseconds of CPU per unit of each pipeline stage outside the HTTP call, timed stage by stage in a loop
    over the same trajectories (no event loop, no server): where run()'s extra time per unit goes."""
    import asyncio

    import fake_provider
    from injector import LLMEngine, Taxonomy, load_trajectories, parse_answer, render_messages, validate_answer
    from injector.answer.contract import DEFAULT_OUTPUT_MODE, response_schema
    from injector.engines.base import Engine, Proposal
    from injector.engines.llm import import_litellm
    from injector.inject.unit import inject_one
    from injector.records.directory import RunDirectory

    taxonomy = Taxonomy.load()
    category = taxonomy.category(CATEGORY)
    trajectories = list(load_trajectories(input_path, "trajectories"))
    edits = DEFAULT_OUTPUT_MODE == "edits"
    texts = []
    for t in trajectories:
        answer = fake_provider.valid_answer(t.question, list(t.steps))
        texts.append(json.dumps(fake_provider.as_edits(answer, list(t.steps)) if edits else answer))
    litellm = import_litellm()
    response = litellm.ModelResponse(choices=[{"message": {"role": "assistant", "content": texts[0]}}],
                                     model="bench", usage={"prompt_tokens": 1700, "completion_tokens": 70,
                                                           "total_tokens": 1770})
    engine = LLMEngine(MODEL, api_base="http://127.0.0.1:9/v1", cache=None, client="litellm")
    answers = dict(zip((t.id for t in trajectories), texts))

    class Canned(Engine):  # an engine that answers at once: the whole of inject_one but the HTTP call
        name, takes_feedback = "canned", True

        def describe(self):
            return engine.describe()

        async def propose(self, messages, *, trajectory, **kwargs):
            return Proposal(text=answers[trajectory.id], usage={"prompt_tokens": 1700, "completion_tokens": 70},
                            cost=None)

    run_dir = RunDirectory(work / "stage-costs")
    run_dir.prepare("stage-costs")
    records = []

    async def all_units():
        for t in trajectories:
            records.append(await inject_one(taxonomy, category, t, Canned(), output_mode=DEFAULT_OUTPUT_MODE))

    stages = {
        "render_messages": lambda: [render_messages(taxonomy, category, t, output_mode=DEFAULT_OUTPUT_MODE)
                                    for t in trajectories],
        "response_schema": lambda: [response_schema(multi_solution=False, edits=edits) for _ in trajectories],
        "parse+validate": lambda: [validate_answer(taxonomy, category, t, parse_answer(x, edits=edits))
                                   for t, x in zip(trajectories, texts)],
        "engine._cost (completion_cost)": lambda: [engine._cost(litellm, response, {}) for _ in trajectories],
        "inject_one, answer canned": lambda: asyncio.run(all_units()),
        "RunDirectory.append": lambda: [run_dir.append(r) for r in records],
    }
    costs = {}
    for name, stage in stages.items():
        start = time.process_time()
        stage()
        costs[name] = (time.process_time() - start) / len(trajectories) * 1e6
    run_dir.release()
    return costs


def run_worker(kind: str, api_base: str, input_path: Path, concurrency: int, out: Path, work: Path) -> dict:
    command = [sys.executable, str(BENCH), "_worker", kind, api_base, str(input_path), str(concurrency), str(out)]
    result = subprocess.run(command, capture_output=True, text=True, env=subprocess_env(work))
    if result.returncode != 0:
        raise RuntimeError(f"worker {kind} failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def scenario_overhead(report: Report, work: Path, quick: bool) -> None:
    n, concurrency, rounds = (300 if quick else 2000), 64, (1 if quick else ROUNDS)
    log(f"2 overhead: {n} requests, instant server, concurrency {concurrency}, {rounds} interleaved rounds")
    input_path = make_input(work / "s2.jsonl", n)
    rows: list[dict] = []
    with ProviderProcess() as provider:
        # Is the provider the bottleneck? Serve the same payloads to a minimal raw-socket client first.
        from injector import LLMEngine, Taxonomy, load_trajectories, render_messages
        from injector.answer.contract import response_schema
        from injector.answer.contract import DEFAULT_OUTPUT_MODE

        taxonomy = Taxonomy.load()
        category = taxonomy.category(CATEGORY)
        engine = LLMEngine(MODEL, api_base=provider.api_base)
        schema = response_schema(multi_solution=False, edits=DEFAULT_OUTPUT_MODE == "edits")
        bodies = []
        for trajectory in load_trajectories(input_path, "trajectories"):
            messages = render_messages(taxonomy, category, trajectory, output_mode=DEFAULT_OUTPUT_MODE)
            request = engine.request(messages, 0, schema, "x")
            request.pop("api_base")
            bodies.append(json.dumps(request).encode())
        capacity = measure_capacity(provider.api_base, bodies, concurrency)
        log(f"  provider capacity (raw client, {concurrency} connections): {capacity:.0f} requests/s")
        for k in range(rounds):
            order = ("bare", "run", "run-fixed") if k % 2 == 0 else ("run-fixed", "run", "bare")
            measured = {}
            for kind in order:
                provider.reset()
                result = run_worker(kind, provider.api_base, input_path, concurrency, work / f"s2-{kind}-{k}",
                                    work)
                result["requests"] = provider.stats()["requests"]
                measured[kind] = result
                log(f"  round {k + 1} {kind}: {result['done']} in {result['seconds']:.2f} s "
                    f"({result['done'] / result['seconds']:.0f}/s, {result['requests']} requests)")
            rows.append(measured)
        # The whole CLI once, startup included, for reference.
        provider.reset()
        command = inject_command(input_path, work / "s2-cli", provider.api_base, "--no-cache",
                                 "--concurrency", str(concurrency))
        code, cli_wall, _ = run_timed(command, work, "s2-cli")
        cli_done = account(work / "s2-cli", unit_ids(n))["candidates"]
    costs = stage_costs(input_path, work)
    log(f"  CPU per unit outside litellm (us): {costs}")
    ratios = [(r["run"]["done"] / r["run"]["seconds"]) / (r["bare"]["done"] / r["bare"]["seconds"]) for r in rows]
    bare_rates = [r["bare"]["done"] / r["bare"]["seconds"] for r in rows]
    run_rates = [r["run"]["done"] / r["run"]["seconds"] for r in rows]
    fixed = [(r["run-fixed"]["done"] / r["run-fixed"]["seconds"]) / (r["bare"]["done"] / r["bare"]["seconds"])
             for r in rows]
    ratio = statistics.median(ratios)
    report.details["2"] = {"n": n, "rounds": rows, "ratios": ratios, "capacity": capacity, "cli_wall": cli_wall,
                           "stage_costs_us": costs, "fixed_ratios": fixed,
                           "cli_exit": code, "cli_candidates": cli_done}
    ok = all(r["run"]["done"] == n and r["bare"]["done"] == n for r in rows)
    report.add("2 overhead", "run() cand/s / bare litellm resp/s (median of rounds)", ">= 0.8",
               f"{ratio:.2f} ({', '.join(f'{x:.2f}' for x in ratios)})", ok and ratio >= 0.8)
    report.add("2 overhead", "  run() / bare / provider capacity (per s)", "",
               f"{statistics.median(run_rates):.0f} / {statistics.median(bare_rates):.0f} / {capacity:.0f}", None)
    report.add("2 overhead", "  what-if: run() with 3 suggested fixes patched / bare", "",
               f"{statistics.median(fixed):.2f} ({', '.join(f'{x:.2f}' for x in fixed)})", None)
    report.add("2 overhead", "  CPU/unit (us): render, schema, parse+validate, cost", "",
               ", ".join(f"{costs[k]:.0f}" for k in ("render_messages", "response_schema", "parse+validate",
                                                      "engine._cost (completion_cost)")), None)
    report.add("2 overhead", "  CPU/unit (us): inject_one w/o HTTP, append; bare call", "",
               f"{costs['inject_one, answer canned']:.0f}, {costs['RunDirectory.append']:.0f}; "
               f"~{1e6 / statistics.median(bare_rates):.0f} wall", None)
    report.add("2 overhead", "  whole `inject run` CLI incl. startup (cand/s)", "",
               f"{cli_done / cli_wall:.0f} ({cli_done} in {cli_wall:.1f} s)", None)


# --------------------------------------------------------------------------------------------- scenario 3

def scenario_rpm(report: Report, work: Path, quick: bool) -> None:
    n, rpm, latency, concurrency = (150 if quick else 600), 300, 0.5, 16
    log(f"3 rpm: {n} requests (~{n / rpm:.1f} min), server window {rpm}/min, --rpm {rpm}, latency {latency} s")
    input_path = make_input(work / "s3.jsonl", n)
    with ProviderProcess(latency=latency, rpm=rpm) as provider:
        command = inject_command(input_path, work / "s3-run", provider.api_base, "--no-cache", "--rpm", str(rpm),
                                 "--concurrency", str(concurrency))
        code, wall, _ = run_timed(command, work, "s3")
        stats = provider.stats()
    ok_times = sorted(stats["ok_times"])
    rate = (len(ok_times) - 1) / (ok_times[-1] - ok_times[0]) * 60 if len(ok_times) > 1 else 0.0
    counts = account(work / "s3-run", unit_ids(n))
    failed = counts["units"] - counts["candidates"]
    report.details["3"] = {"n": n, "exit": code, "wall": wall, "server": stats["counts"], "rate": rate,
                           "accounting": counts, "command": command}
    report.add("3 rpm", "achieved accepted requests/min / 300 (server side)", ">= 0.9", f"{rate / rpm:.3f}",
               code == 0 and rate / rpm >= 0.9)
    report.add("3 rpm", "failed items", "0", str(failed), failed == 0)
    report.add("3 rpm", "  429s from the window; wall incl. startup (units/min)", "",
               f"{stats['counts'].get('429_rpm', 0)}; {n / wall * 60:.0f}/min over {wall:.0f} s", None)


# --------------------------------------------------------------------------------------------- scenario 4

def scenario_faults(report: Report, work: Path, quick: bool) -> None:
    n = 200 if quick else 1000
    faults = {"p429": 0.10, "retry_after": 1, "p500": 0.05, "ptimeout": 0.02, "hang": 6, "pmalformed": 0.05}
    log(f"4 faults: {n} units, {faults}, --timeout 2")
    input_path = make_input(work / "s4.jsonl", n)
    with ProviderProcess(latency=0.2, seed=4, **faults) as provider:
        command = inject_command(input_path, work / "s4-run", provider.api_base, "--no-cache", "--timeout", "2",
                                 "--concurrency", "32")
        code, wall, _ = run_timed(command, work, "s4")
        stats = provider.stats()
    counts = account(work / "s4-run", unit_ids(n))
    accounted = counts["units"] - counts["lost"]
    report.details["4"] = {"n": n, "exit": code, "wall": wall, "server": stats["counts"], "accounting": counts,
                           "command": command}
    clean = code == 0 and counts["lost"] == 0 and counts["duplicates"] == 0 and counts["unreadable"] == 0
    report.add("4 faults", "units accounted for (unique ids in candidates|rejects)", f"{n}/{n}",
               f"{accounted}/{n}", clean and counts["unknown"] == 0)
    report.add("4 faults", "  candidates, rejects (codes), duplicates", "",
               f"{counts['candidates']}, {counts['rejects']} {counts['reject_codes'] or ''}, {counts['duplicates']}",
               None)
    server = stats["counts"]
    report.add("4 faults", "  requests: 429 / 500 / timeout / malformed; wall", "",
               f"{server['requests']}: {server.get('429_random', 0)} / {server.get('500', 0)} / "
               f"{server.get('timeout', 0)} / {server.get('malformed', 0)}; {wall:.0f} s", None)


# --------------------------------------------------------------------------------------------- scenario 5

def scenario_rerun(report: Report, work: Path, quick: bool) -> None:
    n, concurrency = (1000 if quick else 10000), 64
    log(f"5 rerun: {n} units, instant server, --concurrency {concurrency}")
    input_path = make_input(work / "s5.jsonl", n)
    cache = work / "s5-cache.sqlite"
    units = unit_ids(n)
    runs = {}
    with ProviderProcess() as provider:
        steps = [
            ("first run", work / "s5-a", ["--cache", str(cache)]),
            ("same command again", work / "s5-a", ["--cache", str(cache)]),
            ("same --out, --no-cache", work / "s5-a", ["--no-cache"]),
            ("new --out, same --cache", work / "s5-b", ["--cache", str(cache)]),
        ]
        for k, (name, out, extra) in enumerate(steps):
            provider.reset()
            command = inject_command(input_path, out, provider.api_base, "--concurrency", str(concurrency), *extra)
            code, wall, _ = run_timed(command, work, f"s5-{k}")
            counts = account(out, units)
            runs[name] = {"exit": code, "wall": wall, "requests": provider.stats()["requests"], "accounting": counts,
                          "command": command}
            log(f"  {name}: exit {code}, {wall:.1f} s, {runs[name]['requests']} requests, "
                f"{counts['candidates']} candidates")
    report.details["5"] = {"n": n, "runs": runs}
    first = runs["first run"]
    report.add("5 rerun", "requests sent by the rerun (same command, same --out)", "0",
               str(runs["same command again"]["requests"]),
               runs["same command again"]["requests"] == 0 and runs["same command again"]["exit"] == 0
               and first["accounting"]["candidates"] == n)
    report.add("5 rerun", "  requests: same --out with --no-cache (run dir only)", "0",
               str(runs["same --out, --no-cache"]["requests"]), runs["same --out, --no-cache"]["requests"] == 0)
    cache_run = runs["new --out, same --cache"]
    report.add("5 rerun", "  requests: new --out, same --cache (cache only)", "0", str(cache_run["requests"]),
               cache_run["requests"] == 0 and cache_run["accounting"]["candidates"] == n)
    report.add("5 rerun", "  wall: first / rerun / run-dir only / cache only (s)", "",
               " / ".join(f"{runs[name]['wall']:.1f}" for name, _, _ in steps), None)


# --------------------------------------------------------------------------------------------- scenario 6

class LineCounter:
    """Counts newline-terminated lines appended to a file, reading only what is new."""

    def __init__(self, path: Path):
        self.path, self.offset, self.lines = path, 0, 0

    def poll(self) -> int:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                data = handle.read()
        except FileNotFoundError:
            return self.lines
        if len(data) and self.path.stat().st_size < self.offset:  # rewritten (compaction): count again
            self.offset, self.lines = 0, 0
            return self.poll()
        self.offset += len(data)
        self.lines += data.count(b"\n")
        return self.lines


def scenario_kill(report: Report, work: Path, quick: bool, seed: int) -> None:
    n, kills, concurrency = (300 if quick else 2000), 10, 32
    rng = random.Random(seed)
    log(f"6 kill: {n} units, {kills} SIGKILLs at random points, resuming each time")
    input_path = make_input(work / "s6.jsonl", n)
    out = work / "s6-run"
    units = unit_ids(n)
    history = []
    with ProviderProcess(latency=0.2, reject_fraction=0.1, p500=0.02, seed=6) as provider:
        command = inject_command(input_path, out, provider.api_base, "--no-cache", "--concurrency", str(concurrency))
        env = subprocess_env(work)
        for k in range(kills):
            before = account(out, units) if out.exists() else {"lines": 0}
            by_time = k % 3 == 2  # every third kill at a random time from launch (may hit start-up or shutdown)
            target = rng.randint(1, max(1, n // 15))
            delay = rng.uniform(0.2, 5.0) if by_time else rng.uniform(0.0, 0.05)
            with (work / f"s6-{k}.log").open("w") as log_file:
                process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, env=env)
                counters = [LineCounter(out / "candidates.jsonl"), LineCounter(out / "rejects.jsonl")]
                base = None
                launched = time.monotonic()
                while process.poll() is None:
                    if by_time:
                        if time.monotonic() - launched >= delay:
                            break
                    else:
                        lines = sum(c.poll() for c in counters)
                        base = lines if base is None else base
                        if lines - base >= target:
                            time.sleep(delay)
                            break
                    time.sleep(0.005)
                finished_first = process.poll() is not None
                if not finished_first:
                    process.send_signal(signal.SIGKILL)
                process.wait()
            after = account(out, units)
            history.append({"kill": k + 1, "mode": "time" if by_time else "records", "target": target,
                            "delay": round(delay, 3), "at_seconds": round(time.monotonic() - launched, 2),
                            "exit": process.returncode, "finished_before_kill": finished_first,
                            "lines_before": before["lines"], "lines_after": after["lines"],
                            "torn_tail": after["torn_tail"], "unreadable": after["unreadable"]})
            log(f"  kill {k + 1}: {history[-1]}")
        code, wall, _ = run_timed(command, work, "s6-final")
        stats = provider.stats()
    counts = account(out, units)
    manifest = json.loads((out / "manifest.json").read_text())
    report.details["6"] = {"n": n, "history": history, "final_exit": code, "final_wall": wall,
                           "accounting": counts, "requests": stats["requests"], "server": stats["counts"],
                           "manifest_status": manifest.get("status"), "command": command}
    landed = sum(1 for h in history if not h["finished_before_kill"])
    report.add("6 kill", "duplicates (ids twice, or in both files)", "0", str(counts["duplicates"]),
               counts["duplicates"] == 0 and code == 0)
    report.add("6 kill", "lost items (units in neither file)", "0", str(counts["lost"]), counts["lost"] == 0)
    report.add("6 kill", "unreadable lines (candidates + rejects)", "0", str(counts["unreadable"]),
               counts["unreadable"] == 0 and counts["torn_tail"] == 0)
    report.add("6 kill", "  kills landed; torn tails seen after a kill; total lines/units", "",
               f"{landed}/{kills}; {sum(h['torn_tail'] for h in history)}; {counts['lines']}/{n}", None)
    report.add("6 kill", "  requests sent / units; final manifest status", "",
               f"{stats['requests']}/{n}; {manifest.get('status')}", None)


# --------------------------------------------------------------------------------------------- main

SCENARIOS = {"1": scenario_latency, "2": scenario_overhead, "3": scenario_rpm, "4": scenario_faults,
             "5": scenario_rerun, "6": scenario_kill}


def print_table(report: Report) -> None:
    widths = [10, 56, 9, 44, 4]
    header = ["scenario", "measure", "goal", "measured", ""]
    print(" | ".join(h.ljust(w) for h, w in zip(header, widths)))
    print("-+-".join("-" * w for w in widths))
    for row in report.rows:
        cells = [row.scenario, row.measure, row.goal, row.value, row.verdict]
        print(" | ".join(c.ljust(w) for c, w in zip(cells, widths)))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        kind, api_base, input_path, concurrency, out = sys.argv[2:7]
        worker(kind, api_base, input_path, int(concurrency), out)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes: a smoke run, not a measurement")
    parser.add_argument("--only", default="1,2,3,4,5,6", help="comma-separated scenario numbers")
    parser.add_argument("--json", type=Path, help="also write the rows and details here")
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill points (scenario 6)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (run dirs, logs)")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="scenario 2: interleaved rounds (median)")
    args = parser.parse_args()
    globals()["ROUNDS"] = args.rounds
    if not INJECT.exists():
        sys.exit(f"no `inject` next to {sys.executable}; install the project in this interpreter's environment")
    report = Report()
    work = Path(tempfile.mkdtemp(prefix="bench-run-loop-"))
    log(f"work directory {work}; library {library_fingerprint()}")
    report.details["library"] = {}
    try:
        for key in args.only.split(","):
            key = key.strip()
            before = library_fingerprint()
            try:
                if key == "6":
                    scenario_kill(report, work, args.quick, args.seed)
                else:
                    SCENARIOS[key](report, work, args.quick)
            except Exception as exc:  # report it and go on with the other scenarios
                import traceback

                traceback.print_exc()
                report.add(f"{key} ERROR", "the scenario failed (traceback above)", "", f"{type(exc).__name__}", False)
            after = library_fingerprint()
            report.details["library"][key] = [before, after]
            if before != after:
                report.add(f"{key} WARNING", "library changed during this scenario", "same", f"{before}->{after}",
                           False)
            if args.json:  # after every scenario, so a long run leaves what it has
                args.json.write_text(json.dumps({"rows": [r.__dict__ for r in report.rows],
                                                 "details": report.details}, indent=2, default=str))
    finally:
        print()
        print_table(report)
        if args.keep:
            log(f"kept {work}")
        else:
            import shutil

            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
