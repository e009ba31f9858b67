"""The review list in the triage routing's order: candidates whose signals disagree with their labels
(the step audit's algebra, the blind judge, and rollouts beside them) first, with those signals shown; ordinary
review next; fast-tracked candidates (every speaking signal agrees) last. Within a route, by verdict, then as
written. The routing itself is `injector/triage/step_audit/routing.py`; here only its sort key and its display.
"""
from __future__ import annotations

from typing import Callable, Protocol, TypeVar

from injector.triage.step_audit.routing import (ROUTE_ORDER, Opinion, Routing, algebra_opinion, choose_route,
                                               judge_opinion, rollout_opinion, route_opinions)
from injector.triage.verdicts import VerifyRecord, verdict_rank
from injector.curate.review.diff import e

__all__ = ["Opinion", "algebra_opinion", "entry_routing", "route_badge", "routing_section", "sort_key"]

SIGNALS = {"algebra": "step audit", "judge": "blind judge, inject verify", "rollouts": "rollouts, inject verify --mc"}
"""Each signal and where it comes from, as the page names them."""
ROUTE_NAMES = {"review_first": "review first", "review": "review", "fast_track": "fast track"}


class Routed(Protocol):
    """What the routing needs of a review entry (`session.Entry`)."""

    id: str
    category: str
    algebra: Opinion


RoutedEntry = TypeVar("RoutedEntry", bound=Routed)


def entry_routing(entry: Routed, verdict: VerifyRecord | None) -> Routing:
    return route_opinions(entry.id, entry.category, entry.algebra, verdict)


def sort_key(order: str, verdict_of: Callable[[RoutedEntry], VerifyRecord | None]
             ) -> Callable[[RoutedEntry], tuple[int, ...]]:
    """The list's sort key for `order` (`routing` or `verdict`); a stable sort keeps file order within a key."""
    def by_verdict(entry: RoutedEntry) -> tuple[int, ...]:
        record = verdict_of(entry)
        return (verdict_rank(record.verdict if record else None),)

    def by_routing(entry: RoutedEntry) -> tuple[int, ...]:
        record = verdict_of(entry)
        chosen = choose_route(entry.algebra, judge_opinion(record), rollout_opinion(record))
        return ROUTE_ORDER.index(chosen), verdict_rank(record.verdict if record else None)

    return by_routing if order == "routing" else by_verdict


def route_badge(routing: Routing) -> str:
    """The list's mark of a candidate routed to review first: the signals that disagree with its labels."""
    if routing.route != "review_first":
        return ""
    return (f'<span class="route r-review_first" title="signals disagreeing with the labels">'
            f'≠ {e(", ".join(routing.disagreeing))}</span> ')


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
