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
from typing import Any, Callable, Iterable, Iterator

from .engines.base import Engine
from .errors import BudgetExceeded, UserError, WriteFailed
from .estimates import ESTIMATE_SOURCE, completion_tokens_estimate, solution_text
from .inject import DEFAULT_MAX_ATTEMPTS, DEFAULT_OUTPUT_MODE, OUTPUT_MODES, Unit, answer_mode, inject_one, utc_now
from .prompts import render_messages
from .records import TRANSIENT_FAILURE, Candidate, RunDirectory, RunManifest
from .redaction import redact_command
from .taxonomy import Category, Taxonomy
from .trajectory import Trajectory
from .version import __version__


def default_run_dir() -> Path:
    return Path("runs") / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


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
        return self.accepted == 0 and self.codes.get(TRANSIENT_FAILURE, 0) > 0

    def record(self, record: Any) -> None:
        self.done += 1
        outcome = "accepted" if isinstance(record, Candidate) else "rejected"
        setattr(self, outcome, getattr(self, outcome) + 1)
        self.by_category.setdefault(record.category, {"accepted": 0, "rejected": 0})[outcome] += 1
        for code in getattr(record, "codes", []):
            self.codes[code] = self.codes.get(code, 0) + 1
        if TRANSIENT_FAILURE in getattr(record, "codes", []) and record.messages:
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


def run_configuration(
    *, source: dict[str, Any], taxonomy: Taxonomy, categories: list[Category], engine: Engine, samples: int, seed: int,
    output_mode: str = DEFAULT_OUTPUT_MODE,
) -> dict[str, Any]:
    """The settings that change outputs: a run directory continues only under the same ones."""
    return {
        "input": source,
        "taxonomy": taxonomy.name,
        "taxonomy_path": str(taxonomy.path) if taxonomy.path else None,
        "taxonomy_hash": taxonomy.file_hash(),
        "categories": [c.id for c in categories],
        "template_hashes": {c.id: taxonomy.template_hash(c) for c in categories},
        **engine.describe(),
        "output_mode": output_mode,
        "samples": samples,
        "seed": seed,
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


def _planned_units(trajectories: Iterable[Trajectory], categories: list[Category], samples: int,
                   limit: int | None) -> int | None:
    estimate = getattr(trajectories, "estimated_count", lambda: None)()
    if estimate is None:
        estimate = limit
    elif limit is not None:
        estimate = min(estimate, limit)
    return None if estimate is None else estimate * len(categories) * samples


def run(
    trajectories: Iterable[Trajectory],
    *,
    taxonomy: Taxonomy,
    categories: list[Category],
    engine: Engine,
    out: str | Path | None = None,
    samples: int = 1,
    seed: int = 0,
    limit: int | None = None,
    concurrency: int = 16,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    output_mode: str = DEFAULT_OUTPUT_MODE,
    max_cost: float | None = None,
    retry_rejects: bool = False,
    on_progress: Callable[[RunProgress], None] | None = None,
    source: dict[str, Any] | None = None,
    command: list[str] | None = None,
) -> RunResult:
    """Inject every category into every trajectory (`samples` times each) and write a run directory.

    `source` identifies the input in the run configuration (a `TrajectorySource` provides it); an existing run
    directory of the same configuration is continued. Rejects are a normal outcome, not an exception; a reached
    `max_cost` (dollars, this invocation) raises `BudgetExceeded` after the requests in flight are written.
    """
    source = source if source is not None else getattr(trajectories, "identity", lambda: {"input": "python"})()
    if output_mode not in OUTPUT_MODES:
        raise UserError(f"unknown output mode {output_mode!r}: choose one of {', '.join(OUTPUT_MODES)}")
    engine.check_ready()
    categories, skipped_categories = split_by_support(engine, categories)
    if max_cost is not None and engine_prices(engine) is None:
        raise UserError(f"--max-cost needs a price, and {engine.describe()['model']!r} has none in litellm's list: "
                        "set --price-in and --price-out (dollars per million tokens)")
    config = run_configuration(
        source=source, taxonomy=taxonomy, categories=categories, engine=engine, samples=samples, seed=seed,
        output_mode=output_mode,
    )
    run_dir = RunDirectory(out if out is not None else default_run_dir())
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
        image_base=_image_base(trajectories),
    )
    try:
        run_dir.write_manifest(manifest)
    except WriteFailed:
        run_dir.release()
        raise
    progress = RunProgress(planned=_planned_units(trajectories, categories, samples, limit),
                           retries=lambda: getattr(engine, "retries", 0))
    try:
        asyncio.run(_run_units(
            iter_units(trajectories, categories, samples, limit), taxonomy, engine, run_dir, progress,
            seed=seed, concurrency=concurrency, max_attempts=max_attempts, output_mode=output_mode, max_cost=max_cost,
            retry_rejects=retry_rejects, on_progress=on_progress,
        ))
        manifest.status = "finished"
    except KeyboardInterrupt:
        manifest.status = "interrupted"
        raise
    except BudgetExceeded:
        manifest.status = "budget_exceeded"
        raise
    except BaseException:
        manifest.status = "failed"
        raise
    finally:
        stopping = sys.exc_info()[1]
        try:
            run_dir.compact_rejects()
            stats = getattr(trajectories, "stats", None)
            manifest.source = stats.as_dict() if stats is not None else {}
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


def _image_base(trajectories: Iterable[Trajectory]) -> str | None:
    base = getattr(trajectories, "image_base", None)  # a TrajectorySource knows it; a plain list has none
    return None if base is None else str(base)


def engine_prices(engine: Engine) -> tuple[float, float] | None:
    """Dollars per prompt and completion token; engines without a `prices` method cost nothing."""
    prices = getattr(engine, "prices", None)
    return prices() if prices is not None else (0.0, 0.0)


async def _run_units(
    units: Iterator[Unit],
    taxonomy: Taxonomy,
    engine: Engine,
    run_dir: RunDirectory,
    progress: RunProgress,
    *,
    seed: int,
    concurrency: int,
    max_attempts: int,
    output_mode: str,
    max_cost: float | None,
    retry_rejects: bool,
    on_progress: Callable[[RunProgress], None] | None,
) -> None:
    written = run_dir.written()
    finished = written.finished(retry_rejects)
    queue: asyncio.Queue[Unit | None] = asyncio.Queue(maxsize=2 * concurrency)
    failures: list[BaseException] = []

    def over_budget() -> bool:
        return max_cost is not None and progress.cost is not None and progress.cost >= max_cost

    async def worker() -> None:
        while (unit := await queue.get()) is not None:
            if failures or over_budget():
                continue  # keep draining so the producer never blocks on a full queue
            try:
                record = await inject_one(taxonomy, unit.category, unit.trajectory, engine, sample=unit.sample,
                                          seed=seed, max_attempts=max_attempts, output_mode=output_mode,
                                          read_cache=unit.id not in written.rejected)
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
        for unit in units:
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


def dry_run(
    trajectories: Iterable[Trajectory],
    *,
    taxonomy: Taxonomy,
    categories: list[Category],
    engine: Engine,
    out: str | Path | None = None,
    samples: int = 1,
    limit: int | None = None,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    output_mode: str = DEFAULT_OUTPUT_MODE,
    retry_rejects: bool = False,
) -> DryRunReport:
    """Count the requests and prompt tokens of a run (skipping what `out` already holds), and estimate its cost.

    Completion tokens are estimated per unit from measured figures (`injector.estimates`: fitted per category and
    output mode on PRMBench's GPT-4o answers, from the length of the source solution).
    """
    categories, _ = split_by_support(engine, categories)
    finished: set[str] = set()
    if out is not None and RunDirectory(out).read_manifest() is not None:
        finished = RunDirectory(out).written().finished(retry_rejects)
    count_tokens = getattr(engine, "count_tokens", lambda messages: sum(len(m["content"]) for m in messages) // 4)
    count_text_tokens = getattr(engine, "count_text_tokens", lambda text: len(text) // 4)
    report = DryRunReport(max_attempts=max_attempts if getattr(engine, "takes_feedback", False) else 1)
    completion_tokens = 0.0
    pooled: set[str] = set()
    solution_tokens: tuple[Trajectory | None, int] = (None, 0)  # units come per trajectory: count it once
    for unit in iter_units(trajectories, categories, samples, limit):
        if unit.id in finished:
            report.skipped_existing += 1
            continue
        mode = answer_mode(unit.category, output_mode)
        messages = render_messages(taxonomy, unit.category, unit.trajectory, output_mode=mode, attach_images=False)
        report.units += 1
        report.prompt_tokens += count_tokens(messages)
        if solution_tokens[0] is not unit.trajectory:
            solution_tokens = (unit.trajectory, count_text_tokens(solution_text(unit.trajectory.steps)))
        estimate, measured = completion_tokens_estimate(unit.category.classification, mode, solution_tokens[1])
        completion_tokens += estimate
        if not measured:
            pooled.add(unit.category.id)
    report.completion_tokens_estimate = round(completion_tokens)
    report.pooled_categories = sorted(pooled)
    prices = engine_prices(engine)
    if prices is not None:
        report.cost_estimate = report.prompt_tokens * prices[0] + report.completion_tokens_estimate * prices[1]
    return report
