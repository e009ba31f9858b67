"""One triage routing from three signals: the step audit (algebra), the blind judge's verdict (`verify.jsonl`) and
Monte Carlo rollouts where they were run.

Each signal says, for a candidate, whether its labels look right ("agree"), wrong ("disagree"), or nothing
("silent"). Rollouts measure whether a continuation from a step still reaches the right answer, not whether the
step is valid: they can only *support* a disagreement another signal raises, never raise one alone.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Iterable, Iterator, Literal

from pydantic import BaseModel

from injector.records.audit_flags import StepAuditFindings
from injector.triage.step_audit.audit import RecordAudit
from injector.triage.verdicts import VerifyRecord

Opinion = Literal["agree", "disagree", "silent"]
Route = Literal["fast_track", "review_first", "review"]
OPINIONS: tuple[Opinion, ...] = ("agree", "disagree", "silent")

_JUDGE_AGREES = {"confirmed"}
_JUDGE_DISAGREES = {"missed", "original_flagged", "disputed", "flagged", "early", "late"}
ROLLOUT_DROP = 0.3
"""A rollout score falling by at least this much from before the error step to through it supports the label."""


class Routing(BaseModel):
    """One candidate's signals and the route they give."""

    id: str
    category: str
    algebra: Opinion
    judge: Opinion
    rollouts: Opinion
    route: Route
    disagreeing: list[str]
    """The signals that disagree with the labels, shown to the reviewer."""


def algebra_opinion(audit: RecordAudit | StepAuditFindings | None) -> Opinion:
    """A flag disagrees; an item whose error steps hold a checkably false relation and no flag agrees."""
    if isinstance(audit, RecordAudit):
        audit = audit.recorded()
    if audit is None:
        return "silent"
    if audit.findings:
        return "disagree"
    return "agree" if audit.false_in_error_steps else "silent"


def judge_opinion(verdict: VerifyRecord | None) -> Opinion:
    return verdict_opinion(verdict.verdict if verdict is not None else None)


def verdict_opinion(verdict: str | None) -> Opinion:
    """The judge's opinion from its verdict's name alone (unparseable, unverified or unknown: silent)."""
    if verdict in _JUDGE_AGREES:
        return "agree"
    return "disagree" if verdict in _JUDGE_DISAGREES else "silent"


def rollout_opinion(verdict: VerifyRecord | None) -> Opinion:
    """From the rollout scores before and through the error step: a clear drop agrees, no drop disagrees."""
    scores = verdict.mc if verdict is not None else None
    if scores is None or scores.before is None or scores.through is None:
        return "silent"
    drop = scores.before - scores.through
    return "agree" if drop >= ROLLOUT_DROP else "disagree"


def route(item_id: str, category: str, audit: RecordAudit | StepAuditFindings | None,
          verdict: VerifyRecord | None) -> Routing:
    """All speaking signals agree -> fast track; any of algebra or judge disagreeing -> review first (rollouts
    shown beside it); rollouts disagreeing alone, or no signal speaking -> ordinary review."""
    return route_opinions(item_id, category, algebra_opinion(audit), verdict)


def route_opinions(item_id: str, category: str, algebra: Opinion, verdict: VerifyRecord | None) -> Routing:
    """`route` from the algebra's opinion already taken (the review app keeps only that of each candidate)."""
    return route_signals(item_id, category, algebra, judge_opinion(verdict), rollout_opinion(verdict))


def route_signals(item_id: str, category: str, algebra: Opinion, judge: Opinion, rollouts: Opinion) -> Routing:
    """`route` from the three opinions already taken."""
    opinions = {"algebra": algebra, "judge": judge, "rollouts": rollouts}
    disagreeing = [name for name, opinion in opinions.items() if opinion == "disagree"]
    return Routing(id=item_id, category=category, algebra=algebra, judge=judge, rollouts=rollouts,
                   route=choose_route(algebra, judge, rollouts), disagreeing=disagreeing)


def choose_route(algebra: Opinion, judge: Opinion, rollouts: Opinion) -> Route:
    """The rule of `route`, on the three opinions alone (the review app sorts every candidate by it)."""
    if "disagree" in (algebra, judge):
        return "review_first"
    if rollouts != "disagree" and "agree" in (algebra, judge):
        return "fast_track"
    return "review"


ROUTE_ORDER: tuple[Route, ...] = ("review_first", "review", "fast_track")


def route_rank(routing: Routing) -> int:
    """Sort key for a review queue: disagreements first, fast-tracked items last."""
    return ROUTE_ORDER.index(routing.route)


def routing_agreement(routings: Iterable[Routing]) -> dict[str, dict[str, int]]:
    """Per category: how many candidates have each (algebra, judge, rollouts) combination, plus each route."""
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for item in routings:
        table[item.category][f"algebra={item.algebra} judge={item.judge} rollouts={item.rollouts}"] += 1
        table[item.category][f"route={item.route}"] += 1
    return {category: dict(counts) for category, counts in sorted(table.items())}


def run_routing(run_dir: Path) -> Iterator[Routing]:
    """Every candidate of a run directory routed from the audit it recorded (`inject run`) and its verdict in
    `verify.jsonl` (`inject verify`, with its rollouts when `--mc` ran), one at a time (a run's candidates are not
    held: `inject stats` only counts them); a signal missing is silent."""
    from injector.records.directory import RunDirectory
    from injector.records.unit_ids import Digests, text_digest
    from injector.triage.verdicts import VERIFY_FILE, iter_verdicts

    # Per candidate its latest record's two opinions as one number (a dict of the records: ~3 KB a candidate).
    opinions = Digests()
    if (run_dir / VERIFY_FILE).is_file():
        for record in iter_verdicts(run_dir):
            opinions.put(text_digest(record.id),
                         OPINIONS.index(judge_opinion(record)) * 3 + OPINIONS.index(rollout_opinion(record)))
    for _, candidate in RunDirectory(run_dir).numbered_candidates():
        code = opinions.value(text_digest(candidate.id))
        judge: Opinion = "silent" if code is None else OPINIONS[code // 3]
        rollouts: Opinion = "silent" if code is None else OPINIONS[code % 3]
        yield route_signals(candidate.id, candidate.category, algebra_opinion(candidate.step_audit), judge, rollouts)


def routing_lines(table: dict[str, dict[str, int]]) -> list[str]:
    """The agreement table as text lines: per category, each route's count, then each signal combination's."""
    lines = ["", "triage routing (algebra = step audit, judge = inject verify, rollouts = --mc; all speaking agree -> "
             "fast_track, algebra or judge disagreeing -> review_first; rollouts never decide alone):"]
    for category, counts in table.items():
        routes = ", ".join(f"{name} {counts.get(f'route={name}', 0)}" for name in ROUTE_ORDER)
        lines.append(f"  {category}: {routes}")
        lines += [f"    {key}: {n}" for key, n in sorted(counts.items()) if not key.startswith("route=")]
    return lines
