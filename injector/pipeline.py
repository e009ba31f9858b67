"""The run loop: trajectories x categories x samples -> engine -> parse -> validate -> run directory.

Units stream from the source through a bounded queue to a fixed number of workers, so memory stays flat however
large the input; every unit ends as exactly one candidate or one reject, and a rerun skips what is written.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from . import __version__
from .contract import AnswerError, parse_answer, response_schema
from .engines.base import Engine, NotApplicable, ProviderError, TransientProviderError
from .errors import UserError
from .prompts import render_messages
from .records import Candidate, Rejection, RunDirectory, RunManifest, unit_id
from .taxonomy import Category, Taxonomy
from .trajectory import Trajectory
from .validate import validate_answer

OUTPUT_MODE = "full"  # the model writes back the whole modified solution


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def default_run_dir() -> Path:
    return Path("runs") / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


@dataclass
class Unit:
    """One unit of work: inject `category` into `trajectory`, the `sample`-th time."""

    trajectory: Trajectory
    category: Category
    sample: int

    @property
    def id(self) -> str:
        return unit_id(self.trajectory.id, self.category.id, self.sample)


async def inject_one(
    taxonomy: Taxonomy,
    category: Category,
    trajectory: Trajectory,
    engine: Engine,
    *,
    sample: int = 0,
    seed: int = 0,
) -> Candidate | Rejection:
    """Ask the engine for one injection and return the validated candidate, or the rejection with its codes."""
    unit = Unit(trajectory, category, sample)
    provenance: dict[str, Any] = {
        **engine.describe(),
        "taxonomy": taxonomy.name,
        "taxonomy_hash": taxonomy.file_hash(),
        "template_hash": taxonomy.template_hash(category),
        "seed": seed,
        "output_mode": OUTPUT_MODE,
        "toolkit_version": __version__,
    }
    messages = render_messages(taxonomy, category, trajectory)
    schema = response_schema(multi_solution=category.rules.multi_solution)
    try:
        proposal = await engine.propose(
            messages, trajectory=trajectory, category=category, seed=seed, sample=sample, response_schema=schema
        )
    except (ProviderError, TransientProviderError, NotApplicable) as exc:
        provenance.update(attempts=[{"codes": [exc.code]}], time=utc_now())
        return _rejection(unit, [exc.code], [str(exc)], None, provenance)

    provenance.update(usage=proposal.usage, cost=proposal.cost, **proposal.details)
    try:
        answer = parse_answer(proposal.text, multi_solution=category.rules.multi_solution)
    except AnswerError as exc:
        provenance.update(attempts=[{"codes": [exc.code]}], time=utc_now())
        return _rejection(unit, [exc.code], [exc.message], proposal.text, provenance)

    verdict = validate_answer(taxonomy, category, trajectory, answer)
    provenance.update(attempts=[{"codes": list(verdict.codes)}], time=utc_now())
    if not verdict.accepted:
        return _rejection(unit, verdict.codes, verdict.messages, proposal.text, provenance)
    record: dict[str, Any] = {}
    if category.rules.multi_solution and trajectory.answer is not None:
        record["ground_truth"] = trajectory.answer
    return Candidate(
        original_question=trajectory.question,
        modified_question=verdict.modified_question,
        original_process=list(trajectory.steps),
        modified_process=verdict.modified_process,
        modified_steps=verdict.modified_steps,
        error_steps=verdict.error_steps,
        reason=answer.reason,
        idx=_source_idx(trajectory),
        question=str(trajectory.meta.get("question", trajectory.question)),
        classification=category.classification,
        id=unit.id,
        category=category.id,
        trajectory_id=trajectory.id,
        sample=sample,
        warnings=verdict.warnings,
        provenance=provenance,
        **record,
    )


def _source_idx(trajectory: Trajectory) -> str:
    return str(trajectory.meta.get("idx", trajectory.id))


def _rejection(unit: Unit, codes: list[str], messages: list[str], raw: str | None, provenance: dict) -> Rejection:
    return Rejection(
        id=unit.id,
        trajectory_id=unit.trajectory.id,
        idx=_source_idx(unit.trajectory),
        category=unit.category.id,
        sample=unit.sample,
        codes=list(codes),
        messages=list(messages),
        raw=raw,
        provenance=provenance,
    )


@dataclass
class RunResult:
    """What `run` returns: where the outputs are and the manifest it wrote."""

    out_dir: Path
    manifest: RunManifest
    written: int = 0
    """Units processed by this invocation (the rest were already in the run directory)."""
    skipped_existing: int = 0


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
    *, source: dict[str, Any], taxonomy: Taxonomy, categories: list[Category], engine: Engine, samples: int, seed: int
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
        "output_mode": OUTPUT_MODE,
        "samples": samples,
        "seed": seed,
    }


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


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
    concurrency: int = 8,
    retry_rejects: bool = False,
    source: dict[str, Any] | None = None,
    command: list[str] | None = None,
) -> RunResult:
    """Inject every category into every trajectory (`samples` times each) and write a run directory.

    `source` identifies the input in the run configuration (a `TrajectorySource` provides it); an existing run
    directory of the same configuration is continued. Rejects are a normal outcome, not an exception.
    """
    source = source if source is not None else getattr(trajectories, "identity", lambda: {"input": "python"})()
    engine.check_ready()
    categories, skipped_categories = split_by_support(engine, categories)
    config = run_configuration(
        source=source, taxonomy=taxonomy, categories=categories, engine=engine, samples=samples, seed=seed
    )
    run_dir = RunDirectory(out if out is not None else default_run_dir())
    digest = config_hash(config)
    run_dir.prepare(digest)
    manifest = RunManifest(
        command=command if command is not None else list(sys.argv),
        config=config,
        config_hash=digest,
        toolkit_version=__version__,
        started=utc_now(),
        skipped_categories=skipped_categories,
    )
    run_dir.write_manifest(manifest)
    result = RunResult(out_dir=run_dir.path, manifest=manifest)
    try:
        asyncio.run(_run_units(trajectories, taxonomy, categories, engine, run_dir, result,
                               samples=samples, seed=seed, limit=limit, concurrency=concurrency,
                               retry_rejects=retry_rejects))
        manifest.status = "finished"
    except KeyboardInterrupt:
        manifest.status = "interrupted"
        raise
    except BaseException:
        manifest.status = "failed"
        raise
    finally:
        stats = getattr(trajectories, "stats", None)
        manifest.source = stats.as_dict() if stats is not None else {}
        manifest.counts = run_dir.count_outcomes()
        manifest.totals = manifest.counts.pop("totals")
        manifest.finished = utc_now()
        run_dir.write_manifest(manifest)
    return result


def _units(
    trajectories: Iterable[Trajectory], categories: list[Category], samples: int, limit: int | None
) -> Iterator[Unit]:
    for count, trajectory in enumerate(trajectories):
        if limit is not None and count >= limit:
            return
        for category in categories:
            for sample in range(samples):
                yield Unit(trajectory, category, sample)


async def _run_units(
    trajectories: Iterable[Trajectory],
    taxonomy: Taxonomy,
    categories: list[Category],
    engine: Engine,
    run_dir: RunDirectory,
    result: RunResult,
    *,
    samples: int,
    seed: int,
    limit: int | None,
    concurrency: int,
    retry_rejects: bool,
) -> None:
    accepted, rejected = run_dir.written_ids()
    run_dir.remove_rejects(accepted & rejected)  # a crash between "candidate written" and "reject removed"
    done = accepted | (set() if retry_rejects else rejected)
    queue: asyncio.Queue[Unit | None] = asyncio.Queue(maxsize=2 * concurrency)
    succeeded_after_reject: set[str] = set()
    failures: list[BaseException] = []

    async def worker() -> None:
        while (unit := await queue.get()) is not None:
            if failures:
                continue  # keep draining so the producer never blocks on a full queue
            try:
                record = await inject_one(
                    taxonomy, unit.category, unit.trajectory, engine, sample=unit.sample, seed=seed
                )
            except Exception as exc:  # authentication refused, a bug: stop the whole run
                failures.append(exc)
                continue
            run_dir.append(record)
            result.written += 1
            if isinstance(record, Candidate) and unit.id in rejected:
                succeeded_after_reject.add(unit.id)

    workers = [asyncio.create_task(worker()) for _ in range(max(1, concurrency))]
    try:
        for unit in _units(trajectories, categories, samples, limit):
            if failures:
                break
            if unit.id in done:
                result.skipped_existing += 1
                continue
            await queue.put(unit)
        for _ in workers:
            await queue.put(None)
        await asyncio.gather(*workers)
    except BaseException:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
    finally:
        run_dir.remove_rejects(succeeded_after_reject)
    if failures:
        raise failures[0]
