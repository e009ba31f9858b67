"""A view's window read from the runs' queue indexes (or from the lists a plan's queue or an adjudication narrows
the runs to): the entries around the current one, its position in the view and the view's size. Over the indexes
each is a few statements per run that hand back the window's rows, whatever the run's size; the order (group, run,
seq) merges the runs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from injector.curate.review.queue import Entry, bound, matches, sort_key


@dataclass
class Window:
    """The entries of a view around the current one, and where they stand in it."""

    entries: list[Entry]
    start: int
    """The view position (0-based) of `entries[0]`."""
    current: int
    """The index in `entries` of the current entry (-1 when the view is empty)."""
    total: int
    found: bool
    """Whether the entry asked for is in the view (else the current entry is the view's first)."""

    @property
    def position(self) -> int:
        return self.start + max(self.current, 0)

    def at(self, step: int) -> Entry | None:
        """The entry `step` places after the current one (before it when negative), None past the window."""
        n = self.current + step
        return self.entries[n] if self.current >= 0 and 0 <= n < len(self.entries) else None


def view_window(session: Any, view: Any, key: str | None, before: int, after: int) -> Window:
    """`ReviewSession.window`."""
    if session.listed:
        return _listed_window(session, view, key, before, after)
    order = session.order(view)
    anchor = session.by_key.get(key or "")
    if anchor is not None and not matches(anchor, view):
        anchor = None
    total = sum(run.queue.total(view) for run in session.runs)
    if anchor is None:
        first = _near(session, view, order, None, True, after + 1)
        return Window(first, 0, 0 if first else -1, total, False)
    prior = _near(session, view, order, anchor, False, before)
    following = _near(session, view, order, anchor, True, after)
    position = sum(run.queue.count(view, order, bound(order, anchor, number, False))
                   for number, run in enumerate(session.runs))
    return Window([*prior, anchor, *following], position - len(prior), len(prior), total, True)


def _near(session: Any, view: Any, order: str, anchor: Entry | None, after: bool, limit: int) -> list[Entry]:
    """Up to `limit` entries of the view next to `anchor` on one side, in view order (the runs merged)."""
    if limit <= 0:
        return []
    found = [entry for number, run in enumerate(session.runs)
             for entry in run.queue.near(view, order, after, bound(order, anchor, number, after), limit)]
    found.sort(key=lambda entry: sort_key(order, entry), reverse=not after)
    nearest = found[:limit]
    return nearest if after else nearest[::-1]


def _listed_window(session: Any, view: Any, key: str | None, before: int, after: int) -> Window:
    items, positions = session.listing(view)
    position = positions.get(key or "")
    found = position is not None
    if position is None:
        position, before = 0, 0
    start = max(0, position - before)
    entries = items[start:position + after + 1]
    return Window(entries, start, position - start if entries else -1, len(items), found)
