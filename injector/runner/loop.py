"""The run loop: trajectories x categories x samples -> `inject_one` -> run directory.

Units stream from the source through a bounded queue to `concurrency` workers, so memory stays flat however large
the input; every unit ends as exactly one candidate or one reject; a rerun skips what is written (and retries
transient failures); a cost budget stops the run cleanly, resumable.
"""
from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Iterable, Iterator, Protocol

from pydantic import BaseModel, ConfigDict, Field

from injector.model.codes import ReasonCode
from injector.answer.contract import DEFAULT_OUTPUT_MODE, OutputMode, answer_mode
from injector.engines.base import Engine, Proposal
from injector.util.errors import BatchesPending, BudgetExceeded, UserError, WriteFailed
from injector.runner.estimates import ESTIMATE_SOURCE, completion_tokens_estimate, solution_text
from injector.inject.unit import DEFAULT_MAX_ATTEMPTS, Unit, inject_one
from injector.util.clock import utc_now
from injector.inject.prompts import render_messages
from injector.records.directory import Candidate, Rejection, RunDirectory, RunManifest
from injector.util.redaction import redact_command
from injector.sources import TrajectoryInput, as_input
from injector.taxonomy import Category, Taxonomy
from injector.model.trajectory import Trajectory
from injector.util.version import __version__


def default_run_dir() -> Path:
    return Path("runs") / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


class RunSpec(BaseModel):
    """What a run makes and how: the one description `run`, `dry_run` and the run configuration read.

    `taxonomy`, `categories`, `samples`, `seed` and `output_mode` (with the engine's settings and the input's
    identity) are the run's configuration: a run directory continues only under the same ones. The rest says how
    much of it to do now and how: they may change between invocations of one run directory.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    taxonomy: Taxonomy
    categories: list[Category]
    """The categories to inject (`taxonomy.select([...])`); those the engine cannot make are skipped."""
    samples: int = Field(default=1, ge=1)
    """Candidates to ask for per (trajectory, category)."""
    seed: int = 0
    """Sample k of a unit is sent seed+k."""
    output_mode: OutputMode = DEFAULT_OUTPUT_MODE
    limit: int | None = Field(default=None, ge=1)
    """Use at most this many trajectories."""
    max_attempts: int = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1)
    """Attempts per unit, for engines that take feedback."""
    retry_rejects: bool = False
    """Also redo units the run directory rejected (transient failures are always redone)."""
    out: Path | None = None
    """The run directory; None: `runs/<UTC date-time>`."""
    concurrency: int = Field(default=16, ge=1)
    """Units in flight."""
    max_cost: float | None = Field(default=None, ge=0)
    """Dollars this invocation may spend; reaching it raises `BudgetExceeded` (resumable)."""

    def units(self, trajectories: Iterable[Trajectory], categories: list[Category]) -> Iterator[Unit]:
        """Every unit of `categories` (those of the spec the engine can make), in order, up to `limit`."""
        return iter_units(trajectories, categories, self.samples, self.limit)

    def finished_units(self, run_dir: RunDirectory) -> set[str]:
        """Ids of the units `run_dir` already holds that this invocation skips (see `RunDirectory.written`)."""
        if run_dir.read_manifest() is None:
            return set()
        return run_dir.written().finished(self.retry_rejects)


@dataclass
class RunProgress:
    """Live counts of a run, passed to the `on_progress` callback after every unit."""

    planned: int | None = None
    """Units this invocation expects to do (an upper bound from the input size), when known."""
    done: int = 0
    accepted: int = 0
    rejected: int = 0
    skipped_existing: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    """Dollars spent by this invocation; None once any answer had no known price."""
    codes: dict[str, int] = field(default_factory=dict)
    by_category: dict[str, dict[str, int]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    retries: Callable[[], int] = lambda: 0
    """Transient retries so far (read from the engine)."""
    transient_message: str | None = None
    """The latest transient failure's message: why the provider looks unreachable."""

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    def eta_seconds(self) -> float | None:
        rate = self.rate()
        if self.planned is None or rate <= 0:
            return None
        return max(0.0, (self.planned - self.done) / rate)

    def provider_unreachable(self) -> bool:
        """No unit of this invocation produced a candidate and at least one failed transiently (429/5xx/timeouts/
        connection refused after every retry): nothing useful was done, and the same command retries them."""
        return self.accepted == 0 and self.codes.get(ReasonCode.TRANSIENT_FAILURE, 0) > 0

    def record(self, record: Candidate | Rejection) -> None:
        self.done += 1
        accepted = isinstance(record, Candidate)
        self.accepted += accepted
        self.rejected += not accepted
        outcome = "accepted" if accepted else "rejected"
        self.by_category.setdefault(record.category, {"accepted": 0, "rejected": 0})[outcome] += 1
        if isinstance(record, Rejection):
            for code in record.codes:
                self.codes[code] = self.codes.get(code, 0) + 1
            if ReasonCode.TRANSIENT_FAILURE in record.codes and record.messages:
                self.transient_message = record.messages[-1]
        usage = record.provenance.get("usage") or {}
        self.prompt_tokens += usage.get("prompt_tokens", 0)
        self.completion_tokens += usage.get("completion_tokens", 0)
        cost = record.provenance.get("cost")
        self.cost = None if self.cost is None or cost is None else self.cost + cost


@dataclass
class RunResult:
    """What `run` returns: where the outputs are, the manifest it wrote and this invocation's progress."""

    out_dir: Path
    manifest: RunManifest
    progress: RunProgress


def split_by_support(engine: Engine, categories: list[Category]) -> tuple[list[Category], dict[str, str]]:
    """The categories the engine can make, and why it skips the others (skipped categories are not units)."""
    supported, skipped = [], {}
    for category in categories:
        reason = engine.unsupported_reason(category)
        if reason is None:
            supported.append(category)
        else:
            skipped[category.id] = reason
    if not supported:
        names = ", ".join(f"{cid} ({why})" for cid, why in skipped.items())
        raise UserError(
            f"the {engine.describe()['engine']} engine cannot make {names}; pass --model with an LLM, e.g. "
            "--model gpt-4o, or --model openai/NAME --api-base http://127.0.0.1:8000/v1"
        )
    return supported, skipped


def run_configuration(spec: RunSpec, engine: Engine, input_identity: dict[str, Any],
                      categories: list[Category] | None = None) -> dict[str, Any]:
    """The settings that change outputs: a run directory continues only under the same ones.

    `categories` are the ones the engine can make (default: all of the spec's). The keys and their order are part
    of every run directory's identity (`config_hash`): adding or renaming one makes every existing run refuse to
    resume, so `tests/test_contracts.py` pins the hash of a known configuration.
    """
    taxonomy = spec.taxonomy
    categories = spec.categories if categories is None else categories
    return {
        "input": input_identity,
        "taxonomy": taxonomy.name,
        "taxonomy_path": str(taxonomy.path) if taxonomy.path else None,
        "taxonomy_hash": taxonomy.file_hash(),
        "categories": [c.id for c in categories],
        "template_hashes": {c.id: taxonomy.template_hash(c) for c in categories},
        **engine.describe(),
        "output_mode": spec.output_mode,
        "samples": spec.samples,
        "seed": spec.seed,
    }


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def iter_units(
    trajectories: Iterable[Trajectory], categories: list[Category], samples: int, limit: int | None
) -> Iterator[Unit]:
    # islice, not a counter: a limit must not read (and count as read) one record more than it uses.
    for trajectory in itertools.islice(trajectories, limit):
        for category in categories:
            for sample in range(samples):
                yield Unit(trajectory, category, sample)


def _planned_units(trajectories: TrajectoryInput, categories: list[Category], samples: int,
                   limit: int | None) -> int | None:
    estimate = trajectories.estimated_count()
    if estimate is None:
        estimate = limit
    elif limit is not None:
        estimate = min(estimate, limit)
    return None if estimate is None else estimate * len(categories) * samples


class UnitExecutor(Protocol):
    """Somewhere else to run a run's units (`injector.runner.executors.processes.WorkerProcesses`, `injector.runner.executors.ray_actors.RayExecutor`): the same units and the same
    `inject_one`, every record appended to `run_dir` and counted in `progress`; raises as the local loop does
    (`BudgetExceeded`, the first failure)."""

    def run_units(self, units: Iterator[Unit], spec: RunSpec, engine: Engine, run_dir: RunDirectory,
                  progress: RunProgress, on_progress: Callable[[RunProgress], None] | None) -> None: ...


def run(
    trajectories: TrajectoryInput | Iterable[Trajectory],
    spec: RunSpec,
    engine: Engine,
    *,
    on_progress: Callable[[RunProgress], None] | None = None,
    command: list[str] | None = None,
    executor: UnitExecutor | None = None,
) -> RunResult:
    """Inject every category of `spec` into every trajectory (`spec.samples` times each); write a run directory.

    `trajectories` is a `TrajectoryInput` (what `load_trajectories` returns) or any iterable of `Trajectory`
    (wrapped in an `IterableInput`, whose identity is `{"input": "python"}`); an existing run directory of the same
    configuration is continued. Rejects are a normal outcome, not an exception; a reached `spec.max_cost` (dollars,
    this invocation) raises `BudgetExceeded` after the requests in flight are written. `command` is recorded in the
    manifest (default: `sys.argv`, redacted). `executor` runs the units elsewhere (default: this process's event
    loop).
    """
    source = as_input(trajectories)
    engine.check_ready()
    categories, skipped_categories = split_by_support(engine, spec.categories)
    if spec.max_cost is not None and engine.prices() is None:
        raise UserError(f"--max-cost needs a price, and {engine.describe()['model']!r} has none in litellm's list: "
                        "set --price-in and --price-out (dollars per million tokens)")
    config = run_configuration(spec, engine, source.identity(), categories)
    run_dir = RunDirectory(spec.out if spec.out is not None else default_run_dir())
    digest = config_hash(config)
    run_dir.prepare(digest)
    manifest = RunManifest(
        command=redact_command(command if command is not None else list(sys.argv)),  # no key in the manifest
        config=config,
        config_hash=digest,
        toolkit_version=__version__,
        started=utc_now(),
        categories={c.id: {"name": c.name, "domain": c.domain, "classification": c.classification}
                    for c in categories},
        skipped_categories=skipped_categories,
        image_base=None if source.image_base is None else str(source.image_base),
        deployments=engine.servers(),
    )
    try:
        run_dir.write_manifest(manifest)
    except WriteFailed:
        run_dir.release()
        raise
    progress = RunProgress(planned=_planned_units(source, categories, spec.samples, spec.limit),
                           retries=lambda: engine.retries)
    try:
        with spec.taxonomy.fixed():  # hashed and its prompts' static parts built once, not per unit
            if executor is None:
                asyncio.run(_run_units(spec.units(source, categories), spec, engine, run_dir, progress, on_progress))
            else:
                executor.run_units(spec.units(source, categories), spec, engine, run_dir, progress, on_progress)
        manifest.status = "finished"
    except KeyboardInterrupt:
        manifest.status = "interrupted"
        raise
    except BudgetExceeded:
        manifest.status = "budget_exceeded"
        raise
    except BatchesPending:
        manifest.status = "batches_pending"
        raise
    except BaseException:
        manifest.status = "failed"
        raise
    finally:
        stopping = sys.exc_info()[1]
        try:
            run_dir.compact_rejects()
            manifest.source = source.stats.as_dict()
            manifest.counts = run_dir.count_outcomes()
            manifest.totals = manifest.counts.pop("totals")
            manifest.finished = utc_now()
            run_dir.write_manifest(manifest)
        except WriteFailed:
            if stopping is None:
                raise
            # The full disk that stopped the run fails the manifest too: report the first failure, not this one.
        finally:
            run_dir.release()
    return RunResult(out_dir=run_dir.path, manifest=manifest, progress=progress)


class _BatchGate(Engine):
    """A batch engine as the run loop sees it: whenever every worker waits on the engine (no further request can
    come until one is answered), the engine is told to send what it has collected (`Engine.flush`)."""

    def __init__(self, engine: Engine, workers: int):
        self.engine, self.live, self.waiting = engine, workers, 0
        self.name, self.takes_feedback = engine.name, engine.takes_feedback

    def describe(self) -> dict[str, Any]:
        return self.engine.describe()

    async def propose(self, messages: list[dict[str, Any]], **request: Any) -> Proposal:
        answer = asyncio.ensure_future(self.engine.propose(messages, **request))
        await asyncio.sleep(0)  # the engine files the request; counted as waiting only once it is filed
        self.waiting += 1
        try:
            await self.flush_if_all_wait()
            return await answer
        finally:
            self.waiting -= 1

    async def worker_done(self) -> None:
        self.live -= 1
        await self.flush_if_all_wait()

    async def flush_if_all_wait(self) -> None:
        if self.live and self.waiting >= self.live:
            await self.engine.flush()


async def run_units(units: Iterator[Unit] | AsyncIterator[Unit], spec: RunSpec, engine: Engine, run_dir: RunDirectory,
                    progress: RunProgress, on_progress: Callable[[RunProgress], None] | None) -> None:
    """The run loop itself, for executors that run it in other processes (`injector.runner.executors.processes`): units may come
    from an async iterator, so waiting for the next one never blocks the requests in flight."""
    await _run_units(units, spec, engine, run_dir, progress, on_progress)


async def _unit_stream(units: Iterator[Unit] | AsyncIterator[Unit]) -> AsyncIterator[Unit]:
    if isinstance(units, AsyncIterator):
        async for unit in units:
            yield unit
    else:
        for unit in units:
            yield unit


async def _run_units(
    units: Iterator[Unit] | AsyncIterator[Unit],
    spec: RunSpec,
    engine: Engine,
    run_dir: RunDirectory,
    progress: RunProgress,
    on_progress: Callable[[RunProgress], None] | None,
) -> None:
    concurrency, max_cost = spec.concurrency, spec.max_cost
    gate = _BatchGate(engine, concurrency) if engine.collects_batches else None
    written = run_dir.written()
    finished = written.finished(spec.retry_rejects)
    queue: asyncio.Queue[Unit | None] = asyncio.Queue(maxsize=2 * concurrency)
    failures: list[BaseException] = []

    def over_budget() -> bool:
        return max_cost is not None and progress.cost is not None and progress.cost >= max_cost

    async def worker() -> None:
        try:
            await work()
        finally:
            if gate is not None:
                await gate.worker_done()

    async def work() -> None:
        while (unit := await queue.get()) is not None:
            if failures or over_budget():
                continue  # keep draining so the producer never blocks on a full queue
            try:
                record = await inject_one(spec.taxonomy, unit.category, unit.trajectory, gate or engine,
                                          sample=unit.sample, seed=spec.seed, max_attempts=spec.max_attempts,
                                          output_mode=spec.output_mode, read_cache=unit.id not in written.rejected)
                run_dir.append(record)
            except WriteFailed as exc:  # nothing more can be written: stop now, not after the requests in flight
                failures.append(exc)
                write_failed.set()
                continue
            except Exception as exc:  # authentication refused, a bug: stop the whole run
                failures.append(exc)
                continue
            progress.record(record)
            if on_progress:
                on_progress(progress)

    async def produce() -> None:
        async for unit in _unit_stream(units):
            if failures or over_budget():
                break
            if unit.id in finished:
                progress.skipped_existing += 1
                if progress.planned is not None:
                    progress.planned -= 1
                continue
            await queue.put(unit)
        for _ in workers:
            await queue.put(None)

    write_failed = asyncio.Event()
    workers = [asyncio.create_task(worker()) for _ in range(max(1, concurrency))]
    everything = asyncio.gather(produce(), *workers)
    stop: asyncio.Future[Any] = asyncio.create_task(write_failed.wait())
    try:
        await asyncio.wait([everything, stop], return_when=asyncio.FIRST_COMPLETED)
        if everything.done():
            everything.result()  # raises what the producer raised (a bad input line)
    finally:
        # A failed write (or an exception) leaves the units in flight unwritten: a rerun redoes them.
        everything.cancel()
        stop.cancel()
        await asyncio.gather(everything, stop, return_exceptions=True)
    if failures:
        raise failures[0]
    if over_budget():
        raise BudgetExceeded(f"spent ${progress.cost:.4f}, reaching --max-cost ${max_cost:g}; "
                             "run the same command again to continue")


@dataclass
class DryRunReport:
    """What a run would send, counted before anything is spent."""

    units: int = 0
    skipped_existing: int = 0
    prompt_tokens: int = 0
    completion_tokens_estimate: int = 0
    cost_estimate: float | None = None
    """Dollars for one attempt per unit; None when the model has no known price."""
    max_attempts: int = 1
    completion_estimate_source: str = ESTIMATE_SOURCE
    """Where the completion-token figures come from (said in the output)."""
    pooled_categories: list[str] = field(default_factory=list)
    """Categories PRMBench has no answers for: estimated with the pooled fit."""


def dry_run(trajectories: TrajectoryInput | Iterable[Trajectory], spec: RunSpec, engine: Engine) -> DryRunReport:
    """Count the requests and prompt tokens of `run(trajectories, spec, engine)` (skipping what `spec.out` already
    holds), and estimate its cost.

    Completion tokens are estimated per unit from measured figures (`injector.runner.estimates`: fitted per category and
    output mode on PRMBench's GPT-4o answers, from the length of the source solution).
    """
    categories, _ = split_by_support(engine, spec.categories)
    finished = spec.finished_units(RunDirectory(spec.out)) if spec.out is not None else set()
    report = DryRunReport(max_attempts=spec.max_attempts if engine.takes_feedback else 1)
    completion_tokens = 0.0
    pooled: set[str] = set()
    solution_tokens: tuple[Trajectory | None, int] = (None, 0)  # units come per trajectory: count it once
    for unit in spec.units(as_input(trajectories), categories):
        if unit.id in finished:
            report.skipped_existing += 1
            continue
        mode = answer_mode(unit.category, spec.output_mode)
        messages = render_messages(spec.taxonomy, unit.category, unit.trajectory, output_mode=mode,
                                   attach_images=False)
        report.units += 1
        report.prompt_tokens += engine.count_tokens(messages)
        if solution_tokens[0] is not unit.trajectory:
            solution_tokens = (unit.trajectory, engine.count_text_tokens(solution_text(unit.trajectory.steps)))
        estimate, measured = completion_tokens_estimate(unit.category.classification, mode, solution_tokens[1])
        completion_tokens += estimate
        if not measured:
            pooled.add(unit.category.id)
    report.completion_tokens_estimate = round(completion_tokens)
    report.pooled_categories = sorted(pooled)
    prices = engine.prices()
    if prices is not None:
        report.cost_estimate = report.prompt_tokens * prices[0] + report.completion_tokens_estimate * prices[1]
    return report
