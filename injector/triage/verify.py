"""`inject verify`: a blind judge triages every candidate of a run directory before human review.

For each candidate, one critique of the modified solution and one of the original (once per source trajectory and
critique kind, shared by every category and sample that uses it), a verdict (`critique.verdict_of`), optional votes
and Monte Carlo rollouts, written as one `VerifyRecord` line of `RUN/verify.jsonl` (appended through the run
directory's multi-writer machinery, so it may run beside `inject run`) and summed up in `RUN/verify-summary.json`.
The run's own files (manifest, candidates, rejects) are only read: its configuration hash never changes.
"""
from __future__ import annotations

import asyncio
import json
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, Field

from injector.answer.final import answers_equivalent, extract_final_answer, final_answer_of_steps
from injector.triage.critique import (JUDGE_SCHEMA, critique_kind, critique_messages, majority, parse_judgement, reask_message,
                       rollout_messages, UnreadableJudgement, verdict_of)
from injector.engines.base import Engine, Proposal, ProviderError, TransientProviderError
from injector.util.safe_files import write_replacing
from injector.util.errors import BudgetExceeded, UserError, WriteFailed
from injector.records.directory import RunDirectory
from injector.records.models import Candidate
from injector.taxonomy import Taxonomy, run_taxonomy
from injector.util.clock import utc_now
from injector.triage.verdicts import VERDICTS, VERIFY_FILE, VERIFY_SUMMARY_FILE, JudgeAnswer, VerifyRecord, read_verdicts
from injector.util.version import __version__

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


@dataclass
class Usage:
    """Requests, tokens and dollars (None once any answer had no known price)."""

    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0

    def add(self, proposal: Proposal) -> None:
        if proposal.details.get("cached"):
            self.cached += 1
        else:
            self.requests += 1
        self.prompt_tokens += proposal.usage.get("prompt_tokens", 0)
        self.completion_tokens += proposal.usage.get("completion_tokens", 0)
        self.cost = None if self.cost is None or proposal.cost is None else self.cost + proposal.cost

    def merge(self, other: "Usage") -> None:
        self.requests += other.requests
        self.cached += other.cached
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost = None if self.cost is None or other.cost is None else self.cost + other.cost


@dataclass
class VerifySummary:
    """What `verify` returns and writes as `verify-summary.json`: verdict counts per category over everything
    verify.jsonl holds, and what this invocation did and spent."""

    run_dir: str
    verdicts: dict[str, dict[str, int]] = field(default_factory=dict)
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
    usage: Usage = field(default_factory=Usage)
    """This invocation's requests, tokens and cost."""
    status: str = "running"
    judge: dict[str, Any] = field(default_factory=dict)
    toolkit_version: str = __version__

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge_settings(engine: Engine, spec: VerifySpec, rollout_engine: Engine | None) -> dict[str, Any]:
    """What makes a verdict (recorded on every line): a rerun with the same settings skips verified candidates."""
    settings = {**engine.describe(), "votes": spec.votes, "votes_all": spec.votes_all, "rollouts": spec.rollouts,
                "seed": spec.seed}
    if spec.rollouts and rollout_engine is not None and rollout_engine is not engine:
        settings["rollout_model"] = rollout_engine.describe().get("model")
    return settings


@dataclass
class _Critique:
    answer: JudgeAnswer
    usage: Usage


@dataclass
class _Work:
    candidate: Candidate
    kind: str


def _open_run(run_dir: str | Path, spec: VerifySpec, engine: Engine, rollout_engine: Engine | None
              ) -> tuple[RunDirectory, list[_Work], dict[str, Any], int]:
    """The run directory, the candidates to verify (with their critique kind), the judge settings, and how many
    candidates verify.jsonl already holds with these settings."""
    directory = RunDirectory(run_dir)
    directory.join()
    taxonomy, _ = run_taxonomy(directory.path, spec.taxonomy)
    recorded = directory.manifest_categories()
    settings = judge_settings(engine, spec, rollout_engine)
    done = {record_id for record_id, record in read_verdicts(directory.path).items()
            if (record.model_extra or {}).get("judge") == settings}
    work, skipped = [], 0
    for candidate in directory.candidates():
        if candidate.id in done:
            skipped += 1
            continue
        work.append(_Work(candidate, _kind(taxonomy, recorded, candidate)))
    return directory, work, settings, skipped


def _kind(taxonomy: Taxonomy, recorded: dict[str, dict[str, str]], candidate: Candidate) -> str:
    category = next((c for c in taxonomy.categories if c.id == candidate.category), None)
    about = recorded.get(candidate.category, {})
    # A category the taxonomy lacks is judged by what the manifest recorded of it; a candidate with neither changed
    # nor error steps can only be a different correct solution (no other rule lets one through validation).
    return critique_kind(category, domain=about.get("domain", ""),
                         classification=about.get("classification", candidate.classification),
                         multi_solution=not candidate.error_steps and not candidate.modified_steps)


def _declared_first(candidate: Candidate, kind: str) -> int | None:
    return min(candidate.error_steps) if candidate.error_steps and kind != "alternative" else None


def rollout_truth(candidate: Candidate, kind: str) -> str | None:
    """The answer rollouts are judged against, when the candidate qualifies: its final answer changed and its
    question did not (else None). The source is correct, so its final answer is the truth (`ground_truth` first)."""
    if kind == "alternative" or not candidate.error_steps or candidate.modified_question != candidate.original_question:
        return None
    original = final_answer_of_steps(candidate.original_process)
    modified = final_answer_of_steps(candidate.modified_process)
    if original is None or modified is None or answers_equivalent(original, modified):
        return None
    return candidate.ground_truth or original


class _Judge:
    """One verify pass: shared original critiques, requests bounded by `concurrency`, usage summed."""

    def __init__(self, engine: Engine, rollout_engine: Engine, spec: VerifySpec, usage: Usage):
        self.engine, self.rollout_engine, self.spec, self.usage = engine, rollout_engine, spec, usage
        self.slots = asyncio.Semaphore(spec.concurrency)
        self.originals: dict[tuple[str, str, int], asyncio.Future[_Critique]] = {}

    async def _ask(self, engine: Engine, messages: list[dict[str, Any]], sample: int, usage: Usage,
                   schema: dict[str, Any] | None, name: str) -> str:
        async with self.slots:
            proposal = await engine.ask(messages, seed=self.spec.seed + sample, response_schema=schema,
                                        schema_name=name)
        usage.add(proposal)
        self.usage.add(proposal)
        return proposal.text

    async def critique(self, kind: str, question: str, steps: list[str], images: list[str], sample: int) -> _Critique:
        """One critique; an unreadable answer is asked once more with what was wrong, then recorded unparseable."""
        usage = Usage()
        messages = critique_messages(kind, question, steps, images)
        text = await self._ask(self.engine, messages, sample, usage, JUDGE_SCHEMA, "critique")
        try:
            return _Critique(parse_judgement(text, len(steps)), usage)
        except UnreadableJudgement as first:
            problem = str(first)
        messages = [*messages, {"role": "assistant", "content": text},
                    {"role": "user", "content": reask_message(problem, len(steps))}]
        text = await self._ask(self.engine, messages, sample, usage, JUDGE_SCHEMA, "critique")
        try:
            return _Critique(parse_judgement(text, len(steps)), usage)
        except UnreadableJudgement as second:
            # `raw`: the judge's last answer, for the reviewer (an extra field of the shared record).
            unreadable = {"first_error_step": None, "reason": f"unparseable: {second}", "raw": text[:2000]}
            return _Critique(JudgeAnswer.model_validate(unreadable), usage)

    async def original(self, candidate: Candidate, kind: str, sample: int, usage: Usage) -> _Critique:
        """The original's critique of this kind and sample, asked once per trajectory; the candidate that asks first
        carries its usage."""
        key = (candidate.trajectory_id, kind, sample)
        future = self.originals.get(key)
        if future is None:
            future = self.originals[key] = asyncio.ensure_future(self.critique(
                kind, candidate.original_question, candidate.original_process, candidate.images, sample))
            result = await asyncio.shield(future)
            usage.merge(result.usage)
            return result
        return await asyncio.shield(future)

    async def pair(self, work: _Work, sample: int, usage: Usage) -> tuple[_Critique, _Critique | None]:
        candidate = work.candidate
        modified = self.critique(work.kind, candidate.modified_question, candidate.modified_process,
                                 candidate.images, sample)
        if work.kind == "alternative":
            judged = await modified
            usage.merge(judged.usage)
            return judged, None
        judged, original = await asyncio.gather(modified, self.original(candidate, work.kind, sample, usage))
        usage.merge(judged.usage)
        return judged, original

    async def rollouts(self, candidate: Candidate, first: int, truth: str, usage: Usage) -> dict[str, Any]:
        """Monte Carlo scores: the share of `rollouts` continuations reaching `truth` from the prefix before the
        first error step and from the prefix through it."""
        n = self.spec.rollouts
        scores: dict[str, Any] = {"n": n}
        for name, prefix in (("before", candidate.modified_process[:first - 1]),
                             ("through", candidate.modified_process[:first])):
            messages = rollout_messages(candidate.modified_question, prefix, candidate.images)
            texts = await asyncio.gather(*(self._ask(self.rollout_engine, messages, k, usage, None, "rollout")
                                           for k in range(n)))
            # math-verify is called here, on the event loop's (main) thread: its timeout needs the main thread.
            correct = sum(answers_equivalent(extract_final_answer(text), truth) for text in texts)
            scores[name] = correct / n
            scores[f"{name}_correct"] = correct
        scores["answer"] = truth
        return scores

    async def verify_one(self, work: _Work, settings: dict[str, Any]) -> VerifyRecord:
        candidate, kind = work.candidate, work.kind
        declared = _declared_first(candidate, kind)
        usage = Usage()
        pairs = [await self.pair(work, 0, usage)]
        verdicts = [_verdict(kind, declared, *pairs[0])]
        if self.spec.votes > 1 and (self.spec.votes_all or verdicts[0] != "confirmed"):
            more = await asyncio.gather(*(self.pair(work, k, usage) for k in range(1, self.spec.votes)))
            pairs.extend(more)
            verdicts.extend(_verdict(kind, declared, *pair) for pair in more)
        verdict = majority(verdicts)
        chosen = verdicts.index(verdict) if verdict in verdicts else 0  # disputed: the first sample is shown
        modified, original = pairs[chosen]
        mc = None
        truth = rollout_truth(candidate, kind) if self.spec.rollouts and declared is not None else None
        if truth is not None and declared is not None:
            mc = await self.rollouts(candidate, declared, truth, usage)
        # Validated, not constructed: `verdict_votes`, `judge` (the settings a rerun compares) and `time` are extra
        # fields of the shared record, and the verdict and kind are checked against its literals.
        return VerifyRecord.model_validate({
            "id": candidate.id, "category": candidate.category, "trajectory_id": candidate.trajectory_id,
            "verdict": verdict, "kind": kind, "declared_first_error": declared, "judge_modified": modified.answer,
            "judge_original": original.answer if original else None,
            "votes": [m.answer.first_error_step for m, _ in pairs], "mc": mc, "usage": asdict(usage),
            "verdict_votes": verdicts, "judge": settings, "time": utc_now()})


def _verdict(kind: str, declared: int | None, modified: _Critique, original: _Critique | None) -> str:
    return verdict_of(kind, declared, modified.answer, original.answer if original else None)


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
    directory, work, settings, skipped = _open_run(run_dir, spec, engine, rollout_engine)
    summary = VerifySummary(run_dir=str(directory.path), planned=len(work), skipped_existing=skipped,
                            judge=settings)
    try:
        asyncio.run(_verify_all(directory, work, _Judge(engine, rollout_engine, spec, summary.usage), settings,
                                summary, on_progress))
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
        _finish_summary(directory, summary)
    return summary


async def _verify_all(directory: RunDirectory, work: list[_Work], judge: _Judge, settings: dict[str, Any],
                      summary: VerifySummary, on_progress: Callable[[VerifySummary], None] | None) -> None:
    path = directory.path / VERIFY_FILE
    fatal: list[BaseException] = []
    in_flight = asyncio.Semaphore(judge.spec.concurrency)
    max_cost = judge.spec.max_cost

    def over_budget() -> bool:
        cost = summary.usage.cost
        return max_cost is not None and cost is not None and cost >= max_cost

    async def one(item: _Work) -> None:
        try:
            record = await judge.verify_one(item, settings)
            directory.append_to(path, record)
        except (ProviderError, TransientProviderError) as exc:
            summary.failed += 1
            summary.failure = str(exc)
        except Exception as exc:  # authentication refused, a write failure, a bug: stop the pass
            fatal.append(exc)
        else:
            summary.verified += 1
        finally:
            in_flight.release()
        if on_progress:
            on_progress(summary)

    tasks: list[asyncio.Task[None]] = []
    for item in work:
        await in_flight.acquire()
        if fatal or over_budget():
            in_flight.release()
            break
        tasks.append(asyncio.create_task(one(item)))
    await asyncio.gather(*tasks)
    if fatal:
        raise fatal[0]
    if over_budget():
        raise BudgetExceeded(f"spent ${summary.usage.cost:.4f}, reaching --max-cost ${max_cost:g}; run the same "
                             "command again to continue")


def _finish_summary(directory: RunDirectory, summary: VerifySummary) -> None:
    """Count the verdicts verify.jsonl holds per category and write verify-summary.json (beside, then renamed)."""
    records = read_verdicts(directory.path)
    candidate_ids = {candidate.id for candidate in directory.candidates()}
    summary.candidates = len(candidate_ids)
    counts: dict[str, Counter[str]] = {}
    for record in records.values():
        if record.id in candidate_ids:
            counts.setdefault(record.category, Counter())[record.verdict] += 1
    summary.verdicts = {category: {v: counts[category][v] for v in VERDICTS if counts[category][v]}
                        for category in sorted(counts)}
    target = directory.path / VERIFY_SUMMARY_FILE
    try:  # a fresh .tmp, never through a link planted in a received directory
        write_replacing(target, (json.dumps(summary.as_dict(), indent=2) + "\n").encode("utf-8"))
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
    _, work, _, skipped = _open_run(run_dir, spec, engine, rollout_engine)
    plan = VerifyPlan(candidates=len(work), skipped_existing=skipped)
    seen: set[tuple[str, str]] = set()
    for item in work:
        candidate = item.candidate
        to_judge = [(candidate.modified_question, candidate.modified_process)]
        if item.kind != "alternative" and (candidate.trajectory_id, item.kind) not in seen:
            seen.add((candidate.trajectory_id, item.kind))
            to_judge.append((candidate.original_question, candidate.original_process))
        for question, steps in to_judge:
            plan.prompt_tokens += engine.count_tokens(critique_messages(item.kind, question, steps, candidate.images))
        plan.critiques += len(to_judge)
        declared = _declared_first(candidate, item.kind)
        if spec.rollouts and declared is not None and rollout_truth(candidate, item.kind) is not None:
            plan.rollout_candidates += 1
    plan.originals = len(seen)
    plan.completion_tokens_estimate = plan.critiques * JUDGE_COMPLETION_TOKENS
    plan.most_requests = 2 * plan.critiques * spec.votes + plan.rollout_candidates * 2 * spec.rollouts
    prices = engine.prices()
    if prices is not None:
        plan.cost_estimate = plan.prompt_tokens * prices[0] + plan.completion_tokens_estimate * prices[1]
    return plan


def summary_table(summary: VerifySummary) -> str:
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


def status_line(summary: VerifySummary) -> str:
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


__all__ = ["VerifyPlan", "VerifySpec", "VerifySummary", "Usage", "judge_settings", "plan_table", "plan_verify",
           "rollout_truth", "status_line", "summary_table", "verify"]
