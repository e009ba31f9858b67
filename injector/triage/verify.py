"""`inject verify`: a blind judge triages every candidate of a run directory before human review.

For each candidate, one critique of the modified solution and one of the original (once per source trajectory and
critique kind, shared by every category and sample that uses it), a verdict (`critique.verdict_of`), optional votes
and Monte Carlo rollouts, written as one `VerifyRecord` line of `RUN/verify.jsonl` (appended through the run
directory's multi-writer machinery, so it may run beside `inject run`) and summed up in `RUN/verify-summary.json`.
The run's own files (manifest, candidates, rejects) are only read: its configuration hash never changes. The judge's
work on one candidate is in judging.py; one pass holds `RUN/.verify.lock` (a second is refused).
"""
from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from pydantic import BaseModel, ConfigDict, Field

from injector.engines.base import Engine, ProviderError, TransientProviderError
from injector.model.provenance import EngineInfo
from injector.records.directory import RunDirectory
from injector.records.jsonl import records_at, scan_records
from injector.records.models import Candidate
from injector.records.unit_ids import Digests, text_digest
from injector.runner.run_log import event
from injector.taxonomy import Taxonomy, run_taxonomy
from injector.triage.critique import critique_kind, critique_messages
from injector.triage.judging import Judge, Work, declared_first, rollout_truth
from injector.triage.verdicts import VERDICTS, VERIFY_FILE, VERIFY_SUMMARY_FILE, JudgeSettings, JudgeUsage
from injector.triage.verify_index import Pending, PendingList, ScratchIndex
from injector.util.errors import BudgetExceeded, UserError, WriteFailed
from injector.util.safe_files import write_replacing
from injector.util.version import __version__

VERIFY_LOCK = ".verify.lock"
"""Held by the `inject verify` pass working on a run directory (a second one is refused)."""
JUDGE_COMPLETION_TOKENS = 60
"""The dry run's guess at one critique's answer (`{"first_error_step": 3, "reason": "<a sentence or two>"}`)."""


class VerifySpec(BaseModel):
    """How `verify` judges a run: votes, rollouts, seed (these are recorded with each line: a rerun with the same
    ones skips what is verified), and how much to do now (concurrency, budget)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    votes: int = Field(default=1, ge=1)
    """Critiques per solution for candidates whose first verdict is not `confirmed` (all with `votes_all`)."""
    votes_all: bool = False
    rollouts: int = Field(default=0, ge=0)
    """Continuations per prefix (before and through the first error step); 0: none."""
    seed: int = 0
    """Sample k of a critique or rollout is sent seed+k."""
    concurrency: int = Field(default=16, ge=1)
    """Requests in flight."""
    max_cost: float | None = Field(default=None, ge=0)
    """Dollars this invocation may spend; reaching it raises `BudgetExceeded` (the same command continues)."""
    taxonomy: str | None = None
    """The taxonomy naming the categories' critique kinds (default: the one the run's manifest records)."""


class VerifySummary(BaseModel):
    """What `verify` returns and writes as `verify-summary.json`: verdict counts per category over everything
    verify.jsonl holds, and what this invocation did and spent."""

    model_config = ConfigDict(extra="forbid")

    run_dir: str
    verdicts: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Category -> verdict -> candidates (the latest line per candidate)."""
    candidates: int = 0
    planned: int = 0
    """Candidates this invocation set out to verify."""
    verified: int = 0
    """Candidates this invocation verified."""
    skipped_existing: int = 0
    """Candidates verify.jsonl already held with the same judge settings."""
    failed: int = 0
    """Candidates left unverified by provider failures (a rerun retries them)."""
    failure: str | None = None
    """The latest such failure's message."""
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    """This invocation's requests, tokens and cost."""
    status: str = "running"
    judge: JudgeSettings | None = None
    toolkit_version: str = __version__

    def as_json(self) -> dict[str, Any]:
        """The summary as verify-summary.json holds it (the judge's settings as its records carry them)."""
        data = self.model_dump(mode="json")
        data["judge"] = None if self.judge is None else self.judge.model_dump(mode="json", exclude_unset=True)
        return data


def judge_settings(engine: Engine, spec: VerifySpec, rollout_engine: Engine | None) -> JudgeSettings:
    """What makes a verdict (recorded on every line): a rerun with the same settings skips verified candidates."""
    settings = {**engine.describe(), "votes": spec.votes, "votes_all": spec.votes_all, "rollouts": spec.rollouts,
                "seed": spec.seed}
    if spec.rollouts and rollout_engine is not None and rollout_engine is not engine:
        settings["rollout_model"] = EngineInfo.model_validate(rollout_engine.describe()).model
    return JudgeSettings.model_validate(settings)


def _open_run(run_dir: str | Path, spec: VerifySpec, engine: Engine, rollout_engine: Engine | None,
              index: ScratchIndex) -> tuple[RunDirectory, PendingList, JudgeSettings, int]:
    """The run directory, the candidates to verify (where they are in candidates.jsonl, with their critique kind),
    the judge settings, and how many candidates verify.jsonl already holds with these settings.

    Only offsets are kept, and ids are looked up in `index` (on disk): a pass over a large run holds one candidate
    per request in flight, not the run."""
    directory = RunDirectory(run_dir)
    directory.join()
    taxonomy, _ = run_taxonomy(directory.path, spec.taxonomy)
    recorded = directory.manifest_categories()
    settings = judge_settings(engine, spec, rollout_engine)
    index.read_verdicts(directory.path, settings)
    pending, skipped = PendingList(), 0
    # `RunDirectory.indexed_candidates`, its set of the ids seen kept in `index`: the first line of an id only.
    for _, offset, candidate in scan_records(directory.candidates_path, Candidate):
        if not index.first_time(candidate.id):
            continue
        if index.judged_with_same_settings(candidate.id):
            skipped += 1
            continue
        pending.append(Pending(offset, _kind(taxonomy, recorded, candidate)))
    return directory, pending, settings, skipped


def _work(directory: RunDirectory, pending: PendingList) -> Iterator[Work]:
    """Each pending candidate read back from its offset as its turn comes."""
    candidates = records_at(directory.candidates_path, (item.offset for item in pending), Candidate)
    for item, candidate in zip(pending, candidates):
        yield Work(candidate, item.kind)


def _kind(taxonomy: Taxonomy, recorded: dict[str, dict[str, str]], candidate: Candidate) -> str:
    category = next((c for c in taxonomy.categories if c.id == candidate.category), None)
    about = recorded.get(candidate.category, {})
    # A category the taxonomy lacks is judged by what the manifest recorded of it; a candidate with neither changed
    # nor error steps can only be a different correct solution (no other rule lets one through validation).
    return critique_kind(category, domain=about.get("domain", ""),
                         classification=about.get("classification", candidate.classification),
                         multi_solution=not candidate.error_steps and not candidate.modified_steps)



def _check_engines(engine: Engine, rollout_engine: Engine, spec: VerifySpec) -> None:
    engines = [("judge", engine)]
    if spec.rollouts and rollout_engine is not engine:
        engines.append(("rollout model", rollout_engine))
    for role, judged in engines:
        if not judged.judges:
            raise UserError(f"the {role} must be an LLM: the {judged.name} engine cannot judge; pass --model, e.g. "
                            "--model gpt-4o, or --model openai/NAME --api-base http://127.0.0.1:8000/v1")
        judged.check_ready()
        if spec.max_cost is not None and judged.prices() is None:
            raise UserError(f"--max-cost needs a price, and {judged.describe().get('model')!r} has none in "
                            "litellm's list: set --price-in and --price-out (dollars per million tokens)")


def verify(run_dir: str | Path, engine: Engine, spec: VerifySpec | None = None, *,
           rollout_engine: Engine | None = None,
           on_progress: Callable[[VerifySummary], None] | None = None) -> VerifySummary:
    """Judge every candidate of `run_dir` not yet judged with these settings; append to verify.jsonl, write
    verify-summary.json, return the summary.

    Provider failures leave a candidate unverified (counted in `failed`; a rerun retries it); a reached
    `spec.max_cost` raises `BudgetExceeded` after the requests in flight are written; authentication refused, a
    write failure or a bug starts no further candidate and is raised once those in flight are done.
    """
    spec = spec or VerifySpec()
    rollout_engine = rollout_engine or engine
    _check_engines(engine, rollout_engine, spec)
    directory = RunDirectory(run_dir)
    directory.join()
    # One pass at a time: two would both judge every candidate not yet in verify.jsonl (twice the requests).
    with directory.exclusive(VERIFY_LOCK, "`inject verify`"):
        return _verify_locked(directory, engine, rollout_engine, spec, on_progress)


def _verify_locked(directory: RunDirectory, engine: Engine, rollout_engine: Engine, spec: VerifySpec,
                   on_progress: Callable[[VerifySummary], None] | None) -> VerifySummary:
    index = ScratchIndex()
    directory, pending, settings, skipped = _open_run(directory.path, spec, engine, rollout_engine, index)
    summary = VerifySummary(run_dir=str(directory.path), planned=len(pending), skipped_existing=skipped,
                            judge=settings)
    judge = Judge(engine, rollout_engine, spec, summary.usage, index)
    try:
        asyncio.run(_verify_all(directory, _work(directory, pending), judge, spec, settings, summary, on_progress))
        summary.status = "finished"
    except BudgetExceeded:
        summary.status = "budget_exceeded"
        raise
    except KeyboardInterrupt:
        summary.status = "interrupted"
        raise
    except BaseException:
        summary.status = "failed"
        raise
    finally:
        directory.close_files()
        try:
            _finish_summary(directory, summary, index)
        finally:
            index.close()
    return summary


async def _verify_all(directory: RunDirectory, work: Iterator[Work], judge: Judge, spec: VerifySpec,
                      settings: JudgeSettings, summary: VerifySummary,
                      on_progress: Callable[[VerifySummary], None] | None) -> None:
    path = directory.path / VERIFY_FILE
    fatal: list[BaseException] = []
    in_flight = asyncio.Semaphore(spec.concurrency)
    max_cost = spec.max_cost

    def over_budget() -> bool:
        cost = summary.usage.cost
        return max_cost is not None and cost is not None and cost >= max_cost

    async def one(item: Work) -> None:
        try:
            record = await judge.verify_one(item, settings)
            directory.append_to(path, record)
        except (ProviderError, TransientProviderError) as exc:
            summary.failed += 1
            summary.failure = str(exc)
            event("candidate_failed", f"{item.candidate.id}: not verified ({exc})", unit=item.candidate.id)
        except Exception as exc:  # authentication refused, a write failure, a bug: stop the pass
            fatal.append(exc)
        else:
            summary.verified += 1
            event("candidate_verified", f"{record.id}: {record.verdict}", unit=record.id, verdict=record.verdict)
        finally:
            in_flight.release()
        if on_progress:
            on_progress(summary)

    running: set[asyncio.Task[None]] = set()  # only the tasks in flight: finished ones are let go
    for item in work:
        await in_flight.acquire()
        if fatal or over_budget():
            in_flight.release()
            break
        task = asyncio.create_task(one(item))
        running.add(task)
        task.add_done_callback(running.discard)
    await asyncio.gather(*running)
    if fatal:
        raise fatal[0]
    if over_budget():
        raise BudgetExceeded(f"spent ${summary.usage.cost:.4f}, reaching --max-cost ${max_cost:g}; run the same "
                             "command again to continue")


def _finish_summary(directory: RunDirectory, summary: VerifySummary, index: ScratchIndex) -> None:
    """Count the verdicts verify.jsonl holds per category (each candidate's last line, candidates of the run only)
    and write verify-summary.json (beside, then renamed)."""
    index.read_verdicts(directory.path)
    summary.candidates, counts = index.verdict_counts(
        candidate.id for _, _, candidate in scan_records(directory.candidates_path, Candidate))
    summary.verdicts = {category: {v: counts[category][v] for v in VERDICTS if counts[category][v]}
                        for category in sorted(counts)}
    target = directory.path / VERIFY_SUMMARY_FILE
    try:  # a fresh .tmp, never through a link planted in a received directory
        write_replacing(target, (json.dumps(summary.as_json(), indent=2) + "\n").encode("utf-8"))
    except OSError as exc:
        raise WriteFailed(target, exc) from None


@dataclass
class VerifyPlan:
    """What `verify` would send, counted before anything is spent (the dry run)."""

    candidates: int = 0
    skipped_existing: int = 0
    critiques: int = 0
    """First-pass critiques: one per candidate, plus one per distinct (trajectory, kind) original."""
    originals: int = 0
    prompt_tokens: int = 0
    completion_tokens_estimate: int = 0
    most_requests: int = 0
    """With every vote taken, every re-ask of an unreadable answer, and every rollout of a qualifying candidate."""
    rollout_candidates: int = 0
    cost_estimate: float | None = None
    """Dollars for the first pass (no votes, re-asks or rollouts); None when the model has no known price."""


def plan_verify(run_dir: str | Path, engine: Engine, spec: VerifySpec | None = None, *,
                rollout_engine: Engine | None = None) -> VerifyPlan:
    """Count the critiques and prompt tokens of `verify(run_dir, engine, spec)`; send nothing, write nothing."""
    spec = spec or VerifySpec()
    rollout_engine = rollout_engine or engine
    index = ScratchIndex()
    try:
        directory, pending, _, skipped = _open_run(run_dir, spec, engine, rollout_engine, index)
    finally:
        index.close()
    plan = VerifyPlan(candidates=len(pending), skipped_existing=skipped)
    seen = Digests()  # the (trajectory, kind) of each original judged: ~40 bytes each, not a tuple of strings
    for item in _work(directory, pending):
        candidate = item.candidate
        to_judge = [(candidate.modified_question, candidate.modified_process)]
        if item.kind != "alternative" and seen.add(text_digest(f"{candidate.trajectory_id}\x00{item.kind}")) is None:
            to_judge.append((candidate.original_question, candidate.original_process))
        for question, steps in to_judge:
            plan.prompt_tokens += engine.count_tokens(critique_messages(item.kind, question, steps, candidate.images))
        plan.critiques += len(to_judge)
        declared = declared_first(candidate, item.kind)
        if spec.rollouts and declared is not None and rollout_truth(candidate, item.kind) is not None:
            plan.rollout_candidates += 1
    plan.originals = len(seen)
    plan.completion_tokens_estimate = plan.critiques * JUDGE_COMPLETION_TOKENS
    plan.most_requests = 2 * plan.critiques * spec.votes + plan.rollout_candidates * 2 * spec.rollouts
    prices = engine.prices()
    if prices is not None:
        plan.cost_estimate = plan.prompt_tokens * prices[0] + plan.completion_tokens_estimate * prices[1]
    return plan


def verify_summary_table(summary: VerifySummary) -> str:
    """Verdict counts per category (the columns the run has, in `VERDICTS` order), then requests and cost."""
    present = [v for v in VERDICTS if any(v in counts for counts in summary.verdicts.values())]
    width = max([len("category"), *(len(c) for c in summary.verdicts)])
    lines = [f"{'category':{width}}  " + "  ".join(present)] if summary.verdicts else []
    totals: Counter[str] = Counter()
    for category, counts in summary.verdicts.items():
        totals.update(counts)
        lines.append(f"{category:{width}}  " + "  ".join(f"{counts.get(v, 0):>{len(v)}}" for v in present))
    if summary.verdicts:
        lines.append(f"{'all':{width}}  " + "  ".join(f"{totals.get(v, 0):>{len(v)}}" for v in present))
    usage = summary.usage
    cost = "cost unknown" if usage.cost is None else f"${usage.cost:.4f}"
    lines.append(f"{summary.verified} verified now, {summary.skipped_existing} already verified, {summary.failed} "
                 f"failed; {usage.requests} requests ({usage.cached} from the cache), "
                 f"{usage.prompt_tokens + usage.completion_tokens} tokens, {cost}")
    return "\n".join(lines)


def verify_status_line(summary: VerifySummary) -> str:
    """One line of progress: verified so far of those planned, failures, requests, cost."""
    cost = "cost unknown" if summary.usage.cost is None else f"${summary.usage.cost:.4f}"
    return (f"verify: {summary.verified}/{summary.planned} verified, {summary.failed} failed, "
            f"{summary.usage.requests} requests, {cost}")


def plan_table(plan: VerifyPlan) -> str:
    cost = "unknown (no price for this model)" if plan.cost_estimate is None else f"${plan.cost_estimate:.4f}"
    return "\n".join([
        f"candidates to verify  {plan.candidates} ({plan.skipped_existing} already verified)",
        f"critiques            {plan.critiques} ({plan.candidates} modified, {plan.originals} originals); "
        f"up to {plan.most_requests} requests with votes, re-asks and rollouts",
        f"rollout candidates   {plan.rollout_candidates}",
        f"prompt tokens        {plan.prompt_tokens} (first pass)",
        f"completion tokens    {plan.completion_tokens_estimate} (estimated: {JUDGE_COMPLETION_TOKENS} per critique)",
        f"estimated cost       {cost} (first pass)",
    ])


__all__ = ["VerifyPlan", "VerifySpec", "VerifySummary", "judge_settings", "plan_table", "plan_verify",
           "rollout_truth", "verify_status_line", "verify_summary_table", "verify"]
