"""The blind judge's work on one candidate (`Judge.verify_one`): critiques of the modified solution and of the
original (asked once per trajectory, kind and sample, and shared), votes, Monte Carlo rollouts, and the
`VerifyRecord` they make. `verify.py` runs a pass of it over a run directory."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Protocol

from injector.answer.final import answers_equivalent, extract_final_answer, final_answer_of_steps
from injector.engines.base import Engine
from injector.records.models import Candidate
from injector.triage.critique import (JUDGE_SCHEMA, UnreadableJudgement, critique_messages, majority,
                                      parse_judgement, reask_message, rollout_messages, verdict_of)
from injector.triage.verdicts import JudgeAnswer, JudgeSettings, JudgeUsage, MonteCarlo, VerifyRecord
from injector.triage.verify_index import ScratchIndex
from injector.util.clock import utc_now


class JudgingOptions(Protocol):
    """What the judge needs of a pass's settings (`VerifySpec` has them)."""

    @property
    def votes(self) -> int: ...
    @property
    def votes_all(self) -> bool: ...
    @property
    def rollouts(self) -> int: ...
    @property
    def seed(self) -> int: ...
    @property
    def concurrency(self) -> int: ...


@dataclass
class Critique:
    answer: JudgeAnswer
    usage: JudgeUsage


@dataclass
class Work:
    candidate: Candidate
    kind: str


def declared_first(candidate: Candidate, kind: str) -> int | None:
    """The candidate's first declared error step; None for a different correct solution (nothing declared)."""
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



class Judge:
    """One verify pass: shared original critiques, requests bounded by `concurrency`, usage summed."""

    def __init__(self, engine: Engine, rollout_engine: Engine, spec: JudgingOptions, usage: JudgeUsage,
                 answered: ScratchIndex):
        self.engine, self.rollout_engine, self.spec, self.usage = engine, rollout_engine, spec, usage
        self.slots = asyncio.Semaphore(spec.concurrency)
        self.originals: dict[tuple[str, str, int], asyncio.Future[Critique]] = {}
        """The original critiques asked and not yet answered (and those that failed: their candidates fail alike)."""
        self.answered = answered
        """The original critiques answered, on disk: a pass holds those in flight, not one per trajectory."""

    async def _ask(self, engine: Engine, messages: list[dict[str, Any]], sample: int, usage: JudgeUsage,
                   schema: dict[str, Any] | None, name: str) -> str:
        async with self.slots:
            proposal = await engine.ask(messages, seed=self.spec.seed + sample, response_schema=schema,
                                        schema_name=name)
        usage.add(proposal)
        self.usage.add(proposal)
        return proposal.text

    async def critique(self, kind: str, question: str, steps: list[str], images: list[str], sample: int) -> Critique:
        """One critique; an unreadable answer is asked once more with what was wrong, then recorded unparseable."""
        usage = JudgeUsage()
        messages = critique_messages(kind, question, steps, images)
        text = await self._ask(self.engine, messages, sample, usage, JUDGE_SCHEMA, "critique")
        try:
            return Critique(parse_judgement(text, len(steps)), usage)
        except UnreadableJudgement as first:
            problem = str(first)
        messages = [*messages, {"role": "assistant", "content": text},
                    {"role": "user", "content": reask_message(problem, len(steps))}]
        text = await self._ask(self.engine, messages, sample, usage, JUDGE_SCHEMA, "critique")
        try:
            return Critique(parse_judgement(text, len(steps)), usage)
        except UnreadableJudgement as second:
            # `raw`: the judge's last answer, for the reviewer
            return Critique(JudgeAnswer(first_error_step=None, reason=f"unparseable: {second}", raw=text[:2000]),
                            usage)

    async def original(self, candidate: Candidate, kind: str, sample: int, usage: JudgeUsage) -> Critique:
        """The original's critique of this kind and sample, asked once per trajectory; the candidate that asks first
        carries its usage."""
        key = (candidate.trajectory_id, kind, sample)
        future = self.originals.get(key)
        if future is None:
            answer = self.answered.original(key)
            if answer is not None:  # asked and answered earlier: its usage is its first candidate's
                return Critique(answer, JudgeUsage())
            future = self.originals[key] = asyncio.ensure_future(self.critique(
                kind, candidate.original_question, candidate.original_process, candidate.images, sample))
            future.add_done_callback(lambda done: self._answered(key, done))
            result = await asyncio.shield(future)
            usage.merge(result.usage)
            return result
        return await asyncio.shield(future)

    def _answered(self, key: tuple[str, str, int], future: asyncio.Future[Critique]) -> None:
        """An original's critique answered: moved from memory to disk (a failure stays, as it was)."""
        if not future.cancelled() and future.exception() is None:
            self.answered.put_original(key, future.result().answer)
            del self.originals[key]

    async def pair(self, work: Work, sample: int, usage: JudgeUsage) -> tuple[Critique, Critique | None]:
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

    async def rollouts(self, candidate: Candidate, first: int, truth: str, usage: JudgeUsage) -> MonteCarlo:
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
        return MonteCarlo.model_validate(scores)

    async def verify_one(self, work: Work, settings: JudgeSettings) -> VerifyRecord:
        candidate, kind = work.candidate, work.kind
        declared = declared_first(candidate, kind)
        usage = JudgeUsage()
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
        # Validated, not constructed: the verdicts and kind are checked against the record's literals; every field is
        # given (usage too, as a mapping), so every one is written.
        return VerifyRecord.model_validate({
            "id": candidate.id, "category": candidate.category, "trajectory_id": candidate.trajectory_id,
            "verdict": verdict, "kind": kind, "declared_first_error": declared, "judge_modified": modified.answer,
            "judge_original": original.answer if original else None,
            "votes": [m.answer.first_error_step for m, _ in pairs], "mc": mc, "usage": usage.model_dump(),
            "verdict_votes": verdicts, "judge": settings, "time": utc_now()})


def _verdict(kind: str, declared: int | None, modified: Critique, original: Critique | None) -> str:
    return verdict_of(kind, declared, modified.answer, original.answer if original else None)

