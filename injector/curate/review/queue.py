"""One run's review queue read through its index (`queue_index.py`): an entry by id, the entries before or after a
place in a view, how many come before it, the view's size. Each is one statement on an index whose columns are the
view's filters and then its order, so it hands back a page's rows, not the run's; a record is read by its offset
and validated only when shown."""
from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence
from urllib.parse import quote

from pydantic import ValidationError

from injector.records.jsonl import problem_of
from injector.records.models import CANDIDATES_FILE, Candidate
from injector.triage.verdicts import VERIFY_FILE, VerifyRecord
from injector.util.errors import UserError
from injector.curate.review.queue_index import ORDER_KEYS, SOURCES, UNVERIFIED, line_at, make_plain, order_column
from injector.curate.review.store import ReviewStore, store_error

log = logging.getLogger("injector")

STATUS_CODES = {"unreviewed": "", "accepted": "accept", "rejected": "reject"}
"""A status filter's name -> the queue row's status (the standing decision, "" before any)."""


@dataclass
class Entry:
    """Where one candidate lives and what its list needs; the record itself is read from its file on demand."""

    key: str
    """`<run number>/<candidate id>`: ids repeat across runs over the same input."""
    run: int
    id: str
    category: str
    offset: int
    file: str = CANDIDATES_FILE
    """The run directory's file holding the record (gold items, `--gold`, live in their own)."""
    line: int = 0
    seq: int = 0
    """The entry's place in its run's files (candidates first, then gold items)."""
    verdict: str = UNVERIFIED
    status: str = ""
    """The standing decision when the entry was read ("" before any)."""
    groups: dict[str, int] = field(default_factory=dict)
    """Order name -> the entry's group in that order (`ORDER_KEYS`)."""
    verify_offset: int | None = None
    place: int = -1
    """Its place in the reviewer's queue of a review plan (`plan_queue.py`); -1 outside one."""


class NotACandidate(UserError):
    """A line the index lists that does not validate as a candidate: shown as such, never decided or built."""


def load_candidate(run_path: Path, entry: Entry) -> Candidate:
    """The entry's record, validated; `NotACandidate` if its line is none, a `UserError` if it is gone."""
    path = run_path / entry.file
    try:
        value = line_at(path, entry.offset)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it any more ({exc.strerror or exc}); start the app again") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, JsonRefused
        raise NotACandidate(f"{path}:{entry.line}: not a candidate record (not JSON: {exc}); it cannot be decided, "
                            "and `inject build` stops at it: fix or remove the line") from None
    if isinstance(value, dict) and isinstance(value.get("id"), str) and value["id"] != entry.id:
        raise UserError(f"{path}:{entry.line}: holds {value['id']!r}, not the candidate {entry.id!r} any more; the "
                        "file changed while the app was open: start it again")
    try:
        return Candidate.from_stored(value)
    except ValueError as exc:  # ValidationError is one
        reason = problem_of(exc) if isinstance(exc, ValidationError) else str(exc)
        raise NotACandidate(f"{path}:{entry.line}: not a candidate record ({reason}); it cannot be decided, and "
                            "`inject build` stops at it: fix or remove the line") from None


def load_verdict(run_path: Path, offset: int) -> VerifyRecord | None:
    """The verify record at `offset` of the run's verify.jsonl, validated; None (said) when it is none."""
    path = run_path / VERIFY_FILE
    try:
        return VerifyRecord.model_validate(line_at(path, offset))
    except (OSError, ValueError) as exc:
        log.warning("%s: the verify record at byte %d is not one (%s); its verdict is not shown", path, offset, exc)
        return None


def entry_columns() -> tuple[str, ...]:
    """The columns an entry is read from (the orders' groups as `ORDER_KEYS` has them now: it may be extended)."""
    return ("seq", "id", "category", "verdict", "status", "line", "offset", "source", "verify_offset",
            *map(order_column, ORDER_KEYS))


def _columns() -> str:
    return ", ".join(entry_columns())


@dataclass(frozen=True)
class Needs:
    """What a read needs made first: `sql` (with `args`) hands back a row while it is still to be made, and
    `make(store)` makes it (in a write transaction of its own, asked again under the lock)."""

    sql: str
    args: tuple[Any, ...]
    make: Callable[[ReviewStore], bool]


PLAIN = Needs("SELECT 1 WHERE NOT EXISTS (SELECT 1 FROM queue_meta WHERE name = 'plain')", (), make_plain)
"""The queue's own statuses and counts (`queue_index.make_plain`): every read of the queue's views needs them."""
NOTHING = Needs("", (), lambda store: False)


class RunQueue:
    """Reads of one run's queue index; each opens its own connection (threads and processes may share the store)."""

    def __init__(self, store: ReviewStore, run: int, hold: bool = True):
        self.store = store
        self.run = run
        self._indexed: set[tuple[str, ...]] = set()
        # Held open, unused, for the session's life: each read's own connection is then never the store's last
        # one, whose closing checkpoints the WAL (a page of reads paid that each time). Not without `hold` (build
        # reads no views): a read-only connection never closed leaves -wal and -shm in a received run directory.
        if hold:
            self._held = sqlite3.connect(f"file:{quote(str(store.path))}?mode=ro", uri=True, check_same_thread=False)
            self._held.execute("SELECT count(*) FROM sqlite_master").fetchall()

    def row_entry(self, row: Sequence[Any]) -> Entry:
        seq, id_, category, verdict, status, line, offset, source, verify_offset, *groups = row
        file = SOURCES[source] if isinstance(source, int) and 0 <= source < len(SOURCES) else SOURCES[0]
        return Entry(f"{self.run}/{id_}", self.run, id_, category, offset, file, line, seq, verdict, status,
                     dict(zip(ORDER_KEYS, groups)), verify_offset)

    def read(self, sql: str, args: Sequence[Any] = (), index: tuple[str, ...] = (),
             needs: Needs = PLAIN) -> list[Any]:
        """The rows of `sql`; what it `needs` (the queue's own statuses and counts by default) made first, when
        its check, asked on this read's connection, says it is still to be made (at the first read after a build,
        by this process or another)."""
        try:
            with closing(self.store.connect()) as db:
                if needs.sql and db.execute(needs.sql, needs.args).fetchall():  # all: no read left open
                    needs.make(self.store)
                if index and index not in self._indexed:  # made once, on a view's first use, and kept
                    db.execute(f"CREATE INDEX IF NOT EXISTS queue_by_{'_'.join(index)} ON queue ({', '.join(index)})")
                    self._indexed.add(index)
                return db.execute(sql, tuple(args)).fetchall()
        except sqlite3.Error as exc:
            raise store_error(self.store.path, exc, "read the queue of") from None

    def ready(self) -> None:
        """The queue's own statuses, counts and registered candidates made, if they are not yet."""
        self.read("SELECT 1")

    def entry(self, candidate_id: str) -> Entry | None:
        found = self.read(f"SELECT {_columns()} FROM queue WHERE id = ?", (candidate_id,))
        return self.row_entry(found[0]) if found else None

    def all(self) -> list[Entry]:
        """Every entry in file order: O(run), for the queues a plan or an adjudication narrows, not for a page."""
        return [self.row_entry(row) for row in self.read(f"SELECT {_columns()} FROM queue ORDER BY seq")]

    def near(self, view: Any, order: str, after: bool, parts: list[Bound], limit: int) -> list[Entry]:
        """Up to `limit` entries of the view on one side of a place (`parts`: conditions on the order's group and
        seq, nearest first, each an index range), nearest first."""
        column, direction = order_column(order), "" if after else " DESC"
        found: list[Entry] = []
        for part in parts:
            if len(found) >= limit:
                break
            where, args, index = _where(view, order, part)
            sql = (f"SELECT {_columns()} FROM queue WHERE {where} "
                   f"ORDER BY {column}{direction}, seq{direction} LIMIT ?")
            found += [self.row_entry(row) for row in self.read(sql, [*args, limit - len(found)], index)]
        return found

    def count(self, view: Any, order: str, parts: list[Bound]) -> int:
        """How many entries of the view lie in `parts`: counts over the view's index, in SQLite."""
        total = 0
        for part in parts:
            where, args, index = _where(view, order, part)
            total += int(self.read(f"SELECT count(*) FROM queue WHERE {where}", args, index)[0][0])
        return total

    def total(self, view: Any) -> int:
        """The view's size, from the counts the triggers keep."""
        where, args, _ = _where(view, "file", ("1", []))
        return int(self.read(f"SELECT coalesce(sum(n), 0) FROM queue_tally WHERE {where}", args)[0][0])

    def categories(self) -> list[tuple[str, int]]:
        """(category, how many) in order of first appearance."""
        return [(category, int(n)) for category, n in self.read(
            "SELECT c.category, coalesce(sum(t.n), 0) FROM queue_categories c JOIN queue_tally t USING (category) "
            "GROUP BY c.category ORDER BY min(c.first)")]

    def verdicts(self) -> set[str]:
        return {verdict for (verdict,) in self.read(
            "SELECT verdict FROM queue_tally GROUP BY verdict HAVING sum(n) > 0")}


Bound = tuple[str, list[Any]]
"""A condition on a run's entries (SQL with its arguments)."""


def _where(view: Any, order: str, part: Bound) -> tuple[str, list[Any], tuple[str, ...]]:
    """The view's filters and `part` as SQL, and the index that serves them: its filters' columns, then the order's
    group and seq (`part` is an equality on the group and a range on seq, or a range on the group)."""
    filters: list[tuple[str, Any]] = []
    if view.cat:
        filters.append(("category", view.cat))
    if view.verdict not in ("", "all"):
        filters.append(("verdict", view.verdict))
    if view.status not in ("", "all"):
        filters.append(("status", STATUS_CODES.get(view.status, "?")))  # an unknown status matches nothing
    clauses = [f"{column} = ?" for column, _ in filters] + [part[0]]
    columns = tuple(column for column, _ in filters)
    return " AND ".join(clauses), [*(value for _, value in filters), *part[1]], (*columns, order_column(order), "seq")


def bound(order: str, anchor: Entry | None, run: int, after: bool) -> list[Bound]:
    """Where run `run`'s entries lie after (or before) `anchor` in the order (group, run, seq), nearest first:
    each part a range SQLite reads off the view's index (a row-value comparison would scan the whole group).
    Everything without an anchor."""
    if anchor is None:
        return [("1", [])]
    column, group = order_column(order), anchor.groups.get(order, 0)
    farther = f"{column} {'>' if after else '<'} ?"
    if run == anchor.run:
        return [(f"{column} = ? AND seq {'>' if after else '<'} ?", [group, anchor.seq]), (farther, [group])]
    # a later run's entries of the anchor's group come after it, an earlier run's before it
    same_side = (run > anchor.run) == after
    return [(f"{column} {'>=' if after else '<='} ?" if same_side else farther, [group])]


def matches(entry: Entry, view: Any) -> bool:
    """Whether the entry (as read) belongs to the view's filters."""
    if view.cat and entry.category != view.cat:
        return False
    if view.verdict not in ("", "all") and entry.verdict != view.verdict:
        return False
    return view.status in ("", "all") or STATUS_CODES.get(view.status) == entry.status


def sort_key(order: str, entry: Entry) -> tuple[int, int, int]:
    return entry.groups.get(order, 0), entry.run, entry.seq
