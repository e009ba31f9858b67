"""The run loop: trajectories x categories x samples -> `inject_one` -> run directory.

Units stream from the source through a bounded queue to `concurrency` workers, so memory stays flat however large
the input; every unit ends as exactly one candidate or one reject; a rerun skips what is written (and retries
transient failures); a cost budget stops the run cleanly, resumable.
"""
from __future__ import annotations

import asyncio
import itertools
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from injector.answer.contract import answer_mode
from injector.engines.base import Engine
from injector.inject.prompts import render_messages
from injector.model.trajectory import Trajectory
from injector.records.directory import RunDirectory
from injector.records.models import RunManifest, SourceCounts, Spending
from injector.runner.configuration import open_run_directory
from injector.inject.unit import Unit
from injector.runner.run_log import event, run_log
from injector.runner.estimates import (ESTIMATE_SOURCE, LONG_RUN_SECONDS, completion_tokens_estimate, long_run_advice,
                                       rate_limited_seconds, solution_text)
from injector.runner.local import run_units
from injector.runner.spec import (RunProgress, RunResult, RunSpec, UnitExecutor, config_hash,  # noqa: F401
                                  default_run_dir, iter_units, planned_units, run_configuration, split_by_support)
from injector.sources import TrajectoryInput, as_input
from injector.taxonomy import Category
from injector.util.clock import utc_now
from injector.util.errors import BatchesPending, BudgetExceeded, UserError, WriteFailed
from injector.util.redaction import redact_command
from injector.util.version import __version__

def run(
    trajectories: TrajectoryInput | Iterable[Trajectory],
    spec: RunSpec,
    engine: Engine,
    *,
    on_progress: Callable[[RunProgress], None] | None = None,
    command: list[str] | None = None,
    executor: UnitExecutor | None = None,
    on_start: Callable[[Path], None] | None = None,
) -> RunResult:
    """Inject every category of `spec` into every trajectory (`spec.samples` times each); write a run directory.

    `trajectories` is a `TrajectoryInput` (what `load_trajectories` returns) or any iterable of `Trajectory`
    (wrapped in an `IterableInput`, whose identity is `{"input": "python"}`); an existing run directory of the same
    configuration is continued. Rejects are a normal outcome, not an exception; a cost cap (`spec.max_cost` over the
    run directory's invocations, `spec.max_cost_per_invocation`) raises `BudgetExceeded` after the requests in
    flight are written. `command` is recorded in the
    manifest (default: `sys.argv`, redacted). `executor` runs the units elsewhere (default: this process's event
    loop). `on_start` is called with the run directory once the run holds it (its configuration accepted, the
    manifest written): `inject run` writes its options there.
    """
    source = as_input(trajectories)
    engine.check_ready()
    categories, skipped_categories = split_by_support(engine, spec.categories)
    if (refused := price_refusal(spec, engine)) is not None:
        raise UserError(refused)
    config = run_configuration(spec, engine, source.identity(), categories)
    run_dir = RunDirectory(spec.out if spec.out is not None else default_run_dir())
    digest = config_hash(config)
    spec = spec.model_copy(update={"out": run_dir.path,
                                   "spent_before": spent_of(open_run_directory(run_dir, config, digest))})
    manifest = _new_manifest(command, config, digest, categories, skipped_categories, source, engine)
    manifest.spending = spec.spent_before
    try:
        _check_budget_left(spec)
        run_dir.write_manifest(manifest)
        if on_start is not None:
            on_start(run_dir.path)
    except (WriteFailed, BudgetExceeded):
        run_dir.release()
        raise
    progress = RunProgress(planned=planned_units(source, categories, spec.samples, spec.limit),
                           retries=lambda: engine.retries)
    try:
        with run_log(run_dir.path):
            _execute(spec.units(source, categories), spec, engine, run_dir, manifest, progress, on_progress,
                     executor)
    finally:
        manifest.spending = _spent_after(spec.spent_before, progress)
        _close(run_dir, manifest, source, stopping=sys.exc_info()[1])
    return RunResult(out_dir=run_dir.path, manifest=manifest, progress=progress)


def _execute(units: Iterator[Unit], spec: RunSpec, engine: Engine, run_dir: RunDirectory, manifest: RunManifest,
             progress: RunProgress, on_progress: Callable[[RunProgress], None] | None,
             executor: UnitExecutor | None) -> None:
    """Run the units (here or on `executor`), set the manifest's status, and log the start and the end."""
    event("run_started", f"run {manifest.config_hash} started in {run_dir.path}", config_hash=manifest.config_hash,
          command=manifest.command, planned=progress.planned, spent_before=spec.spent_before.total)
    units = _warn_if_long(units, spec, engine, run_dir, progress)
    try:
        with spec.taxonomy.fixed():  # hashed and its prompts' static parts built once, not per unit
            if executor is None:
                asyncio.run(run_units(units, spec, engine, run_dir, progress, on_progress))
            else:
                executor.run_units(units, spec, engine, run_dir, progress, on_progress)
        manifest.status = "finished"
    except BaseException as exc:
        manifest.status = next((status for kind, status in _STOPPED_STATUS if isinstance(exc, kind)), "failed")
        # INFO, not WARNING: the caller reports the exception itself (the CLI's one error line).
        event("run_stopped", f"run {manifest.status}: {type(exc).__name__}: {exc}", status=manifest.status,
              done=progress.done, cost=progress.cost)
        raise
    event("run_finished", f"run finished: {progress.accepted} accepted, {progress.rejected} rejected",
          status=manifest.status, done=progress.done, accepted=progress.accepted, rejected=progress.rejected,
          cost=progress.cost)


ETA_SAMPLE_UNITS = 20
"""Units whose tokens are counted at the start of a rate-limited run, for the time its limits imply."""


def _warn_if_long(units: Iterator[Unit], spec: RunSpec, engine: Engine, run_dir: RunDirectory,
                  progress: RunProgress) -> Iterator[Unit]:
    """The units, none lost; first, when --rpm/--tpm imply more than an hour for the units left (tokens per unit
    counted on the first units as the dry run counts them), one warning on the terminal and in the run's log."""
    rpm, tpm = engine.rate_limits()
    if not (rpm or tpm) or not progress.planned:
        return units
    head: list[Unit] = []
    failure: Exception | None = None
    try:
        head.extend(itertools.islice(units, ETA_SAMPLE_UNITS))
    except Exception as exc:  # noqa: BLE001 - a bad input line: raised where the run reaches it, as without this
        failure = exc
    if head:
        left = max(0, progress.planned - len(spec.finished_units(run_dir)))
        per_unit = sum(sum(_unit_tokens(unit, spec, engine)[:2]) for unit in head) / len(head)
        seconds = rate_limited_seconds(left, round(left * per_unit), rpm, tpm)
        if seconds is not None and seconds > LONG_RUN_SECONDS:
            event("long_run", f"the rate limits imply at least {seconds / 3600:.1f} hours for the {left} units left "
                  f"(~{per_unit:.0f} tokens each, one attempt per unit): {long_run_advice(rpm, tpm)}",
                  level=logging.WARNING, eta_seconds=round(seconds), rpm=rpm, tpm=tpm, units_left=left)
    return _chained(head, failure, units)


def _chained(head: list[Unit], failure: Exception | None, rest: Iterator[Unit]) -> Iterator[Unit]:
    yield from head
    if failure is not None:
        raise failure
    yield from rest


def _unit_tokens(unit: Unit, spec: RunSpec, engine: Engine, solution_tokens: int | None = None
                 ) -> tuple[int, float, bool]:
    """A unit's prompt tokens, its estimated completion tokens, and whether that estimate was measured for its
    category (else the pooled fit); `solution_tokens`: its solution's tokens, when already counted."""
    mode = answer_mode(unit.category, spec.output_mode)
    messages = render_messages(spec.taxonomy, unit.category, unit.trajectory, output_mode=mode, attach_images=False)
    if solution_tokens is None:
        solution_tokens = engine.count_text_tokens(solution_text(unit.trajectory.steps))
    estimate, measured = completion_tokens_estimate(unit.category.classification, mode, solution_tokens)
    return engine.count_tokens(messages), estimate, measured


def price_refusal(spec: RunSpec, engine: Engine) -> str | None:
    """Why a cost cap cannot be kept (the model has no known price), or None: `run` refuses to start on it, and
    the dry run says so beforehand."""
    flags = [flag for flag, cap in (("--max-cost", spec.max_cost),
                                    ("--max-cost-per-invocation", spec.max_cost_per_invocation)) if cap is not None]
    if not flags or engine.prices() is not None:
        return None
    return (f"{' and '.join(flags)} need{'s' if len(flags) == 1 else ''} a price, and "
            f"{engine.describe()['model']!r} has none in litellm's list: set --price-in and --price-out (dollars "
            "per million tokens)")


def spent_of(manifest: RunManifest | None) -> Spending:
    """What a run directory's manifest says it spent over its invocations (an older manifest: its records' cost)."""
    if manifest is None:
        return Spending()
    if manifest.spending is not None:
        return manifest.spending
    return Spending(total=manifest.totals.cost)


def _check_budget_left(spec: RunSpec) -> None:
    """`BudgetExceeded` before anything is sent when --max-cost leaves no room for a unit."""
    left = spec.run_budget_left()
    if left is not None and (left <= 0 or left < spec.spent_before.largest_unit):
        raise BudgetExceeded(spec.budget_message(0.0))


def _spent_after(before: Spending, progress: RunProgress) -> Spending:
    total = None if before.total is None or progress.cost is None else before.total + progress.cost
    return Spending(total=total, largest_unit=max(before.largest_unit, progress.largest_unit_cost))


_STOPPED_STATUS: tuple[tuple[type[BaseException], str], ...] = (
    (KeyboardInterrupt, "interrupted"), (BudgetExceeded, "budget_exceeded"), (BatchesPending, "batches_pending"))
"""The manifest's status for a run stopped by one of these exceptions (any other: `failed`)."""


def _new_manifest(command: list[str] | None, config: dict[str, Any], digest: str, categories: list[Category],
                  skipped_categories: dict[str, str], source: TrajectoryInput, engine: Engine) -> RunManifest:
    return RunManifest(
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


def _close(run_dir: RunDirectory, manifest: RunManifest, source: TrajectoryInput,
           stopping: BaseException | None) -> None:
    """Compact the rejects, write the final counts into the manifest and release the run directory."""
    try:
        manifest.counts, manifest.totals = run_dir.settle()  # compacts the rejects; from the records' index
        manifest.source = SourceCounts.model_validate(source.stats.as_dict())
        manifest.finished = utc_now()
        run_dir.write_manifest(manifest)
    except WriteFailed:
        if stopping is None:
            raise
        # The full disk that stopped the run fails the manifest too: report the first failure, not this one.
    finally:
        run_dir.release()


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
    refusal: str | None = None
    """Why the run itself would be refused before sending anything (a cost cap without a price), when it would."""
    spent_before: float | None = None
    """What the run directory already spent, when `--max-cost` caps it (None: no cap or no directory yet)."""


def dry_run(trajectories: TrajectoryInput | Iterable[Trajectory], spec: RunSpec, engine: Engine) -> DryRunReport:
    """Count the requests and prompt tokens of `run(trajectories, spec, engine)` (skipping what `spec.out` already
    holds), and estimate its cost.

    Completion tokens are estimated per unit from measured figures (`injector.runner.estimates`: fitted per category and
    output mode on PRMBench's GPT-4o answers, from the length of the source solution).
    """
    categories, _ = split_by_support(engine, spec.categories)
    finished = spec.finished_units(RunDirectory(spec.out)) if spec.out is not None else set()
    report = DryRunReport(max_attempts=spec.max_attempts if engine.takes_feedback else 1,
                          refusal=price_refusal(spec, engine))
    if spec.max_cost is not None and spec.out is not None:
        report.spent_before = spent_of(RunDirectory(spec.out).read_manifest()).total
    completion_tokens = 0.0
    pooled: set[str] = set()
    solution_tokens: tuple[Trajectory | None, int] = (None, 0)  # units come per trajectory: count it once
    for unit in spec.units(as_input(trajectories), categories):
        if unit.id in finished:
            report.skipped_existing += 1
            continue
        report.units += 1
        if solution_tokens[0] is not unit.trajectory:
            solution_tokens = (unit.trajectory, engine.count_text_tokens(solution_text(unit.trajectory.steps)))
        prompt, estimate, measured = _unit_tokens(unit, spec, engine, solution_tokens[1])
        report.prompt_tokens += prompt
        completion_tokens += estimate
        if not measured:
            pooled.add(unit.category.id)
    report.completion_tokens_estimate = round(completion_tokens)
    report.pooled_categories = sorted(pooled)
    prices = engine.prices()
    if prices is not None:
        report.cost_estimate = report.prompt_tokens * prices[0] + report.completion_tokens_estimate * prices[1]
    return report
