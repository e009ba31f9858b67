"""The review list in the triage routing's order: candidates whose signals disagree with their labels (the step
audit's algebra, the blind judge, and rollouts beside them) first, with those signals shown; ordinary review next;
fast-tracked candidates (every speaking signal agrees) last; by verdict within a route, then as written. The
routing itself is `injector/triage/step_audit/routing.py`; here only its group in the queue index (`routing_group`,
an order of `queue_index.ORDER_KEYS`) and its display.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Protocol

from pydantic import ValidationError

from injector.records.audit_flags import StepAuditFindings
from injector.triage.step_audit.routing import (ROUTE_ORDER, Opinion, Routing, algebra_opinion, choose_route,
                                               rollout_opinion, verdict_opinion)
from injector.triage.verdicts import VERDICTS, VerifyRecord, verdict_rank
from injector.curate.review.diff import e

SIGNALS = {"algebra": "step audit", "judge": "blind judge, inject verify", "rollouts": "rollouts, inject verify --mc"}
"""Each signal and where it comes from, as the page names them."""
ROUTE_NAMES = {"review_first": "review first", "review": "review", "fast_track": "fast track"}
_BITS = {"algebra": 1, "judge": 2, "rollouts": 4}
_ROUTE_SPAN = 10 * (len(VERDICTS) + 2)
"""A group is route rank x this + verdict rank x 10 + the disagreeing signals' bits (< 8)."""


class IndexFacts(Protocol):
    """What the queue index hands an order's key (`queue_index.Facts`)."""

    verdict: str

    @property
    def record(self) -> dict[str, Any]: ...

    def verify_line(self) -> dict[str, Any] | None: ...

    def last(self, name: bytes) -> int: ...

    def ends_at(self, pattern: re.Pattern[bytes], at: int) -> re.Match[bytes] | None: ...


_NUMBER = rb"\s*:\s*(0|[1-9][0-9]*)\s*"
CLEAN_AUDIT_LAST = re.compile(rb'"step_audit"\s*:\s*\{\s*"steps"' + _NUMBER + rb',\s*"checked_steps"' + _NUMBER
                              + rb',\s*"findings"\s*:\s*\[\s*\]\s*,\s*"false_in_error_steps"' + _NUMBER
                              + rb'\}\s*\}\s*$')
"""A record line ending with a step audit without flags, as `inject run` writes it (its last field): the object
after the last `,` at the top level can only be the record's own `step_audit`, so the line need not be decoded
(matched where the line names `"step_audit"` last, after a `,`: `Facts.ends_at`)."""


def _algebra(facts: IndexFacts) -> Opinion:
    at = facts.last(b'"step_audit"')
    if at < 0:  # most lines of a run written before the audit: no decoding
        return "silent"
    clean = facts.ends_at(CLEAN_AUDIT_LAST, at)  # nearly every line of a run written since: no decoding either
    if clean is not None:
        return "agree" if int(clean.group(3)) else "silent"
    audit = facts.record.get("step_audit")
    return algebra_opinion(StepAuditFindings.model_validate(audit)) if isinstance(audit, dict) else "silent"


def _verify_record(facts: IndexFacts) -> VerifyRecord | None:
    line = facts.verify_line()
    try:
        return VerifyRecord.model_validate(line) if line is not None else None
    except ValidationError:
        return None


def routing_group(facts: IndexFacts) -> int:
    """The candidate's group in the `routing` order (computed once, when the index is built; the verify line is
    read for the rollouts of verified candidates only)."""
    algebra, judge = _algebra(facts), verdict_opinion(facts.verdict)
    rollouts = rollout_opinion(_verify_record(facts)) if judge != "silent" else "silent"
    return _group(algebra, judge, rollouts, facts.verdict)


@lru_cache(maxsize=1024)
def _group(algebra: Opinion, judge: Opinion, rollouts: Opinion, verdict: str) -> int:
    """The group of these opinions and verdict (few distinct ones: computed once each)."""
    opinions = {"algebra": algebra, "judge": judge, "rollouts": rollouts}
    bits = sum(bit for name, bit in _BITS.items() if opinions[name] == "disagree")
    route = ROUTE_ORDER.index(choose_route(algebra, judge, rollouts))
    return route * _ROUTE_SPAN + verdict_rank(verdict) * 10 + bits


def route_badge(group: int | None) -> str:
    """The list's mark of a candidate routed to review first: the signals that disagree with its labels."""
    if group is None or group // _ROUTE_SPAN != ROUTE_ORDER.index("review_first"):
        return ""
    names = [name for name, bit in _BITS.items() if group % 10 & bit]
    return (f'<span class="route r-review_first" title="signals disagreeing with the labels">'
            f'≠ {e(", ".join(names))}</span> ')


def routing_section(routing: Routing) -> str:
    """The candidate's route and what each signal says of its labels (disagreeing ones marked); nothing when no
    signal speaks (neither a recorded audit nor a verdict says anything)."""
    if routing.algebra == routing.judge == routing.rollouts == "silent":
        return ""
    said = "".join(f'<li class="signal {e(getattr(routing, name))}" data-signal="{name}">{name} ({e(source)}): '
                   f'{e(getattr(routing, name))}{"s" if getattr(routing, name) != "silent" else ""}</li>'
                   for name, source in SIGNALS.items())
    return (f'<section id="routing"><h2>triage routing: <span class="route r-{routing.route}">'
            f'{e(ROUTE_NAMES[routing.route])}</span></h2><ul class="signals">{said}</ul>'
            '<p class="help">rollouts show whether a continuation still reaches the right answer, not whether a step '
            'is valid: they never route a candidate alone</p></section>')
