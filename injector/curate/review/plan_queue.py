"""A reviewer's queue of a review plan read through the index (`plan_index.py`): an entry by id, the entries
before or after a place in a view, how many come before it, the view's size, the reviewer's progress. Each is a
statement on an index whose columns are the view's filters and then the place, so it hands back a page's rows,
whatever the queue's length. The status an entry carries is the reviewer's own standing decision (blind queues
never show anyone else's), and its verdict is never shown (it would tell gold items apart)."""
from __future__ import annotations

from typing import Any

from injector.util.errors import UserError
from injector.curate.review.queue import NOTHING, STATUS_CODES, Entry, Needs, RunQueue, entry_columns
from injector.curate.review.plan_index import FILTER_INDEXES
from injector.curate.review.queue_index import UNVERIFIED, make_plan_queue

Part = tuple[str, list[Any]]


class PlanQueue:
    """One reviewer's queue of one run's review plan."""

    def __init__(self, queue: RunQueue, reviewer: str):
        """Makes the reviewer's rows in the index on their first start under this plan."""
        self.queue = queue
        self.reviewer = reviewer
        make_plan_queue(queue.store, reviewer)
        self._needs = Needs("SELECT 1 FROM plan_pending WHERE reviewer = ?", (reviewer,),
                            lambda store: make_plan_queue(store, reviewer))
        """Asked by each read: made again after another process rebuilt the index while this one is open."""
        self._indexed: set[tuple[str, ...]] = set()
        self._columns = ", ".join("p.status" if name == "status" else f"q.{name}" for name in entry_columns())

    def _read(self, sql: str, args: list[Any] | tuple[Any, ...] = ()) -> list[Any]:
        return self.queue.read(sql, args, needs=self._needs)

    @classmethod
    def open(cls, queue: RunQueue, reviewer: str, where: Any) -> "PlanQueue | None":
        """The reviewer's queue of the run's plan; None when the run has no plan; a UserError when the plan has no
        queue for this reviewer (`where` names the run)."""
        names = [name for (name,) in queue.read("SELECT reviewer FROM plan_reviewers ORDER BY number",
                                                needs=NOTHING)]
        if not names:
            return None
        if reviewer not in names:
            raise UserError(f"{where}: its review plan has no queue for {reviewer!r}; open the app with --reviewer "
                            f"and one of: {', '.join(names)}")
        return cls(queue, reviewer)

    def _index(self, view: Any) -> None:
        """Make the view's index on its first use (once per store: it is kept, and dropped with the plan's queue)."""
        filters = tuple(name for name, on in (("category", view.cat), ("status", view.status not in ("", "all")))
                        if on)
        if filters and filters not in self._indexed:
            self._read(f"CREATE INDEX IF NOT EXISTS {FILTER_INDEXES[filters]} ON plan_queue "
                       f"(reviewer, {', '.join(filters)}, place)")
            self._indexed.add(filters)

    def _entries(self, where: str, args: list[Any], tail: str = "") -> list[Entry]:
        rows = self._read(f"SELECT {self._columns}, p.place FROM plan_queue p JOIN queue q ON q.seq = p.seq "
                          f"WHERE p.reviewer = ? AND {where} {tail}", [self.reviewer, *args])
        found = []
        for *row, place in rows:
            entry = self.queue.row_entry(row)
            entry.place = place
            found.append(entry)
        return found

    def entry(self, candidate_id: str) -> Entry | None:
        found = self._entries("p.seq = (SELECT seq FROM queue WHERE id = ?)", [candidate_id])
        return found[0] if found else None

    def all(self) -> list[Entry]:
        """Every entry of the queue in its order: O(queue), never for a page."""
        return self._entries("1", [], "ORDER BY p.place")

    def near(self, view: Any, place: int | None, after: bool, limit: int) -> list[Entry]:
        """Up to `limit` entries of the view after (or before) `place` (everything when None), nearest first."""
        self._index(view)
        where, args = _where(view, ("1", []) if place is None else (f"p.place {'>' if after else '<'} ?", [place]))
        return self._entries(where, args, f"ORDER BY p.place{'' if after else ' DESC'} LIMIT {int(limit)}")

    def count(self, view: Any, place: int) -> int:
        """How many entries of the view come before `place`: a COUNT over the view's index."""
        self._index(view)
        where, args = _where(view, ("p.place < ?", [place]))
        return int(self._read(f"SELECT count(*) FROM plan_queue p WHERE p.reviewer = ? AND {where}",
                              [self.reviewer, *args])[0][0])

    def total(self, view: Any) -> int:
        """The view's size, from the counts the triggers keep."""
        where, args = _where(view, ("1", []))
        return int(self._read(f"SELECT coalesce(sum(n), 0) FROM plan_tally p WHERE p.reviewer = ? AND {where}",
                              [self.reviewer, *args])[0][0])

    def categories(self) -> list[tuple[str, int]]:
        """(category, how many) in the queue's order of first appearance."""
        return [(category, int(n)) for category, n in self._read(
            "SELECT c.category, coalesce(sum(t.n), 0) FROM plan_categories c JOIN plan_tally t "
            "ON t.reviewer = c.reviewer AND t.category = c.category WHERE c.reviewer = ? "
            "GROUP BY c.category ORDER BY min(c.first)", [self.reviewer])]

    def progress(self) -> list[tuple[str, str, int]]:
        """(category, own standing decision or "", how many) over the queue."""
        return [(category, status, int(n)) for category, status, n in self._read(
            "SELECT category, status, n FROM plan_tally WHERE reviewer = ?", [self.reviewer])]


def _where(view: Any, part: Part) -> Part:
    """The view's filters and `part` as SQL over `plan_queue p` (or `plan_tally p`). No verdict is shown in a
    reviewer's queue: every entry is `unverified`, and a filter on another verdict matches nothing."""
    clauses, args = [part[0]], list(part[1])
    if view.cat:
        clauses.append("p.category = ?")
        args.append(view.cat)
    if view.status not in ("", "all"):
        clauses.append("p.status = ?")
        args.append(STATUS_CODES.get(view.status, "?"))  # an unknown status matches nothing
    if view.verdict not in ("", "all", UNVERIFIED):
        clauses.append("0")
    return " AND ".join(clauses), args


def plan_matches(entry: Entry, view: Any) -> bool:
    """Whether the entry (as read from the plan's queue) belongs to the view's filters."""
    if view.cat and entry.category != view.cat:
        return False
    if view.verdict not in ("", "all", UNVERIFIED):
        return False
    return view.status in ("", "all") or STATUS_CODES.get(view.status) == entry.status


def planned_window(session: Any, view: Any, key: str | None, before: int, after: int) -> Any:
    """`ReviewSession.window` over the reviewers' queues of the runs' plans, run after run."""
    from injector.curate.review.views import Window

    plans: list[tuple[int, PlanQueue]] = [(n, run.plan) for n, run in enumerate(session.runs) if run.plan]
    totals = {number: plan.total(view) for number, plan in plans}
    anchor = session.by_key.get(key or "")
    if anchor is not None and not plan_matches(anchor, view):
        anchor = None
    if anchor is None:
        first = _near(plans, view, None, True, after + 1)
        return Window(first, 0, 0 if first else -1, sum(totals.values()), False)
    prior = _near(plans, view, anchor, False, before)
    following = _near(plans, view, anchor, True, after)
    position = sum(totals[number] for number, _ in plans if number < anchor.run)
    position += session.runs[anchor.run].plan.count(view, anchor.place)
    return Window([*prior, anchor, *following], position - len(prior), len(prior), sum(totals.values()), True)


def _near(plans: list[tuple[int, PlanQueue]], view: Any, anchor: Entry | None, after: bool,
          limit: int) -> list[Entry]:
    """Up to `limit` entries of the view next to `anchor` on one side (runs in order), in view order."""
    found: list[Entry] = []
    for number, plan in (plans if after else plans[::-1]):
        if len(found) >= limit:
            break
        if anchor is not None and (number < anchor.run if after else number > anchor.run):
            continue
        place = anchor.place if anchor is not None and number == anchor.run else None
        found += plan.near(view, place, after, limit - len(found))
    return found if after else found[::-1]
