"""The review queue's index, kept in the review store: one row per candidate with what the list needs (id,
category, the blind judge's verdict, the standing decision, where its line starts, a sort group per order), so a
page's window, its position and the size of its view are index lookups, never a walk of the run.

The index is derived data. It is rebuilt whenever a file it was read from changed (device, inode, size,
modification time or the hash of its last bytes differ from what was indexed), so an index received inside a run
directory's store is never used (the receiver's copy has its own inode). Its rows are only a map: a candidate is
read by its offset, validated and its id checked when it is shown (`queue.py`), and `build` validates every line
itself. Lines are read here only as JSON objects with a text id and category (`line_fields.py`); a line that is
not one is skipped and said (FILE:LINE). Nothing the files or the store name is ever used as a path: a row's file
is a number into `SOURCES`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
from contextlib import closing
from itertools import repeat
from pathlib import Path
from typing import Any, Callable, Iterator

from injector.records.models import CANDIDATES_FILE
from injector.triage.verdicts import VERDICTS, VERIFY_FILE, verdict_rank
from injector.util.json_bounds import loads_bounded
from injector.util.safe_files import open_read
from injector.curate.review.assign import PLAN_FILE
from injector.curate.review import plan_index
from injector.curate.review.gold import GOLD_FILE
from injector.curate.review.line_fields import scan_fields
from injector.curate.review.routing_order import routing_group
from injector.curate.review.store import ReviewStore, store_error

log = logging.getLogger("injector")

UNVERIFIED = "unverified"
"""The verdict of a candidate `inject verify` has not judged (the verdict filter's name for them)."""
SOURCES = (CANDIDATES_FILE, GOLD_FILE)
"""The files a queue row may point into, by number (the row's `source`)."""
INDEX_VERSION = 4
TAIL_BYTES = 4096
TAIL_SEARCH = 512
"""How far from a line's end `Facts.ends_at` looks."""


class Facts:
    """What an order's key may look at: the candidate's id, category and verdict; `record`, its line decoded (as
    written, unvalidated: check what you read; {} when it is no object), and `verify_line()`, its verify record (a
    dict, or None), are read only when a key asks."""

    __slots__ = ("id", "category", "verdict", "_raw", "_run_path", "_verify_offset", "_record")

    def __init__(self, id_: str, category: str, verdict: str, raw: bytes, run_path: Path, verify_offset: int | None):
        self.id, self.category, self.verdict = id_, category, verdict
        self._raw, self._run_path, self._verify_offset = raw, run_path, verify_offset
        self._record: dict[str, Any] | None = None

    @property
    def record(self) -> dict[str, Any]:
        if self._record is None:
            value = loads_bounded(self._raw.decode("utf-8"))
            self._record = value if isinstance(value, dict) else {}
        return self._record

    def last(self, name: bytes) -> int:
        """Where `name` occurs last in the raw line (-1: nowhere; a key may skip decoding a line without it)."""
        return self._raw.rfind(name)

    def ends_at(self, pattern: re.Pattern[bytes], at: int) -> re.Match[bytes] | None:
        """`pattern` (anchored at the line's end) matched at byte `at`, when that is among the line's last bytes
        and follows a `,` (blanks between allowed): a field there can only be the record's last top-level one."""
        raw = self._raw
        if at < len(raw) - TAIL_SEARCH or at <= 0:
            return None
        before = at - 1
        while before > 0 and raw[before] in b" \t\r\n":
            before -= 1
        return pattern.match(raw, at) if raw[before] == 44 else None  # 44: ","

    def verify_line(self) -> dict[str, Any] | None:
        if self._verify_offset is None:
            return None
        value = line_at(self._run_path / VERIFY_FILE, self._verify_offset)
        return value if isinstance(value, dict) else None


OrderKey = Callable[[Facts], int]
ORDER_KEYS: dict[str, OrderKey] = {
    "routing": routing_group,  # disagreeing signals first (routing_order.py)
    "verdict": lambda facts: verdict_rank(facts.verdict),
    "file": lambda facts: 0,
}
"""How the list may be sorted: name -> a candidate's group (smaller first); within a group, run by run in file
order. Each order is a column of the index (rebuilt once when the orders change), so adding one here is all an
order takes; a key that raises puts the candidate last."""
BY_VERDICT_ALONE = frozenset({"verdict", "file"})
"""The orders whose key reads the candidate's verdict alone: keyed once per verdict when the index is built."""
LAST_GROUP = 1 << 30


def order_column(order: str) -> str:
    if order not in ORDER_KEYS or not re.fullmatch(r"[a-z_]+", order):
        raise ValueError(f"no order {order!r}")
    return f"g_{order}"


def _schema() -> str:
    groups = ", ".join(f"{order_column(order)} INTEGER NOT NULL" for order in ORDER_KEYS)
    return f"""
CREATE TABLE queue (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL, category TEXT NOT NULL, verdict TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT '', line INTEGER NOT NULL, offset INTEGER NOT NULL, source INTEGER NOT NULL,
    verify_offset INTEGER, {groups});
CREATE TABLE queue_tally (category TEXT NOT NULL, verdict TEXT NOT NULL, status TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (category, verdict, status)) WITHOUT ROWID;
CREATE TABLE queue_categories (category TEXT PRIMARY KEY, first INTEGER NOT NULL) WITHOUT ROWID;
"""


_DROP = """
DROP TABLE IF EXISTS queue;
DROP TABLE IF EXISTS queue_tally;
DROP TABLE IF EXISTS queue_categories;
DROP TRIGGER IF EXISTS queue_standing_new;
DROP TRIGGER IF EXISTS queue_standing_changed;
"""
"""Everything the index made, dropped before it is made again: a received store may hold objects of these names
that do something else."""
_AFTER_FILL = """
CREATE UNIQUE INDEX queue_by_id ON queue (id);
DELETE FROM queue_meta WHERE name = 'plain';
"""
"""Filled once per build: the id lookup (a plan's queues are joined to the queue by it). What only the queue's own
views read (`PLAIN`) is made on their first use: a reviewer's start under a plan never reads it."""
PLAIN = """
UPDATE queue SET status = standing.decision FROM standing WHERE standing.id = queue.id;
CREATE TEMP TABLE queue_groups AS SELECT category, verdict, status, count(*) AS n, min(seq) AS first
    FROM queue GROUP BY category, verdict, status;
INSERT INTO queue_tally SELECT category, verdict, status, n FROM temp.queue_groups;
INSERT INTO queue_categories SELECT category, min(first) FROM temp.queue_groups GROUP BY category;
DROP TABLE temp.queue_groups;
INSERT OR IGNORE INTO candidates (id, category) SELECT id, category FROM queue ORDER BY id;
CREATE TRIGGER queue_standing_new AFTER INSERT ON standing BEGIN
    UPDATE queue SET status = NEW.decision WHERE id = NEW.id;
END;
CREATE TRIGGER queue_standing_changed AFTER UPDATE OF decision ON standing BEGIN
    UPDATE queue SET status = NEW.decision WHERE id = NEW.id;
END;
CREATE TRIGGER queue_tally_kept AFTER UPDATE OF status ON queue WHEN OLD.status != NEW.status BEGIN
    UPDATE queue_tally SET n = n - 1
    WHERE category = OLD.category AND verdict = OLD.verdict AND status = OLD.status;
    INSERT INTO queue_tally VALUES (NEW.category, NEW.verdict, NEW.status, 1) ON CONFLICT DO UPDATE SET n = n + 1;
END;
INSERT INTO queue_meta VALUES ('plain', 'made');
"""
"""Made once per build, on the first read of the queue's own views (`make_plain`): the statuses from the standing
decisions, the counts per (category, verdict, status), each category's first row, the candidates the progress
counts. From then on the triggers keep the status and the counts as decisions arrive, whichever process (and
version of the app) writes them: the standing table's own triggers fire on every insert. Before, no trigger keeps
them: they are computed from the standing decisions when made."""


def line_at(path: Path, offset: int) -> Any:
    """The JSON value on the line starting at byte `offset` of `path` (a regular file, never through a link)."""
    with open_read(path, None) as handle:
        handle.seek(offset)
        return loads_bounded(handle.readline())


def _signature(path: Path) -> list[Any] | None:
    """What identifies this version of a file: None when it is missing."""
    try:
        stat = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    with open_read(path, None) as handle:  # a link or a FIFO is refused here, as every reader refuses it
        handle.seek(max(0, stat.st_size - TAIL_BYTES))
        tail = hashlib.sha256(handle.read(TAIL_BYTES)).hexdigest()
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, tail]


def signature(run_path: Path) -> str:
    """What the whole index was built from: the run's files (its plan's too), its orders, the index's version."""
    files = {name: _signature(run_path / name) for name in (*SOURCES, VERIFY_FILE, PLAN_FILE)}
    return json.dumps({"files": files, "orders": list(ORDER_KEYS), "version": INDEX_VERSION}, sort_keys=True)


def queue_signature(run_path: Path, gold: set[str]) -> str:
    """What the queue's rows were built from: the run's files but its plan, and the gold items the plan names (a
    new plan naming the same gold items rebuilds the plan's queues alone)."""
    files = {name: _signature(run_path / name) for name in (*SOURCES, VERIFY_FILE)}
    named = hashlib.sha256("\n".join(sorted(gold)).encode("utf-8", "surrogatepass")).hexdigest()
    return json.dumps({"files": files, "gold": named, "orders": list(ORDER_KEYS), "version": INDEX_VERSION},
                      sort_keys=True)


def refresh(store: ReviewStore, run_path: Path) -> bool:
    """Make the store's queue index match the run's files, rebuilding it when anything changed; whether it did."""
    wanted = signature(run_path)

    def stale(db: sqlite3.Connection) -> bool:
        db.execute("CREATE TABLE IF NOT EXISTS queue_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
        return _indexed(db) != wanted
    return _write_if(store, stale, lambda db: _build(db, run_path, wanted))


def make_plan_queue(store: ReviewStore, reviewer: str) -> bool:
    """Make the reviewer's queue of the indexed plan if it is not made yet (their first start under this plan:
    `plan_index.make_queue`); whether it did."""
    return _write_if(store, lambda db: plan_index.pending(db, reviewer),
                     lambda db: plan_index.make_queue(db, reviewer))


def make_plain(store: ReviewStore) -> bool:
    """Make what the queue's own views read (`PLAIN`) if it is not made since the queue was indexed; whether it
    did."""
    return _write_if(store, lambda db: _indexed(db, "plain") is None, lambda db: _execute_script(db, PLAIN))


def _write_if(store: ReviewStore, needed: Callable[[sqlite3.Connection], bool],
              work: Callable[[sqlite3.Connection], None]) -> bool:
    """`work` in a write transaction of its own when `needed` (asked again once the lock is held: another process
    may have done it while this one waited); whether it ran."""
    try:
        with closing(store.connect()) as db:
            db.isolation_level = None  # the transaction below is ours: BEGIN IMMEDIATE to COMMIT
            if not needed(db):
                return False
            db.execute("BEGIN IMMEDIATE")
            try:
                if not needed(db):
                    db.execute("COMMIT")
                    return False
                db.execute("PRAGMA temp_store = MEMORY")  # the sorts of the index builds, in memory
                db.execute("PRAGMA cache_size = -65536")  # up to 64 MB while building, for this connection only
                work(db)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
    except sqlite3.Error as exc:
        raise store_error(store.path, exc, "index the candidates in") from None
    return True


def _indexed(db: sqlite3.Connection, name: str = "signature") -> str | None:
    found = db.execute("SELECT value FROM queue_meta WHERE name = ?", (name,)).fetchone()
    return found[0] if found is not None else None


def _build(db: sqlite3.Connection, run_path: Path, wanted: str) -> None:
    """The index, dropped and filled again (derived data: a stale or received index is never patched): the queue
    and the plan's queues, or the plan's alone when only the plan changed."""
    from injector.curate.review.assign import read_plan

    plan = read_plan(run_path)
    queue_wanted = queue_signature(run_path, set(plan.gold) if plan is not None else set())
    if _indexed(db, "queue_signature") != queue_wanted:
        _build_queue(db, run_path, set(plan.gold) if plan is not None else set())
    for script in (plan_index.DROP, plan_index.SCHEMA):
        _execute_script(db, script)
    plan_index.fill(db, plan.queues if plan is not None else {})  # each reviewer's made on their first start
    _execute_script(db, plan_index.AFTER_FILL)
    db.executemany("INSERT OR REPLACE INTO queue_meta VALUES (?, ?)",
                   [("signature", wanted), ("queue_signature", queue_wanted)])


def _build_queue(db: sqlite3.Connection, run_path: Path, gold: set[str]) -> None:
    """The queue's rows and their counts. A view's index, the unfiltered ones' too, is made on its first use
    (`queue.RunQueue.read`): a reviewer's queue of a plan never reads them."""
    for script in (_DROP, plan_index.DROP, _schema()):  # the plan's queues point into the queue: dropped with it
        _execute_script(db, script)
    columns = _row_columns()
    db.executemany(f"INSERT INTO queue ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                   _rows(run_path, gold))
    _execute_script(db, _AFTER_FILL)


def _execute_script(db: sqlite3.Connection, script: str) -> None:
    """Each statement of `script` in turn (`executescript` would commit the transaction it runs in)."""
    statement = ""
    for line in script.splitlines(keepends=True):
        statement += line
        if sqlite3.complete_statement(statement):
            db.execute(statement)
            statement = ""


def _verdicts(run_path: Path) -> dict[str, tuple[int, str]]:
    """Candidate id -> (byte offset, verdict) of its latest verify line (read only for those two fields: the
    record is validated when shown)."""
    found: dict[str, tuple[int, str]] = {}
    path = run_path / VERIFY_FILE
    for number, offset, fields, _ in scan_fields(path, (b'"id"', b'"verdict"')):
        if fields[1] in VERDICTS:
            found[fields[0]] = (offset, fields[1])
        else:
            log.warning("%s:%d: not a verify record (verdict %r); skipped", path, number, fields[1])
    return found


def _rows(run_path: Path, gold: set[str]) -> Iterator[tuple[Any, ...]]:
    """The queue's rows (columns as `_row_columns` orders them): the candidates (the first line of an id), then the
    gold items the review plan names. An order of `BY_VERDICT_ALONE` is keyed once per verdict, not per line."""
    verdicts, seen = _verdicts(run_path), set()
    per_line = [key for name, key in ORDER_KEYS.items() if name not in BY_VERDICT_ALONE]
    by_verdict: dict[str, tuple[int, ...]] = {}
    seq = 0
    for source, name in enumerate(SOURCES):
        if source and not gold:
            break
        for number, offset, (id_, category), raw in scan_fields(run_path / name, (b'"id"', b'"category"')):
            if id_ in seen or not id_ or (source and id_ not in gold):
                continue
            seen.add(id_)
            verify_offset, verdict = verdicts.get(id_, (None, UNVERIFIED))
            facts = Facts(id_, category, verdict, raw, run_path, verify_offset)
            shared = by_verdict.get(verdict)
            if shared is None:
                shared = by_verdict[verdict] = tuple(_group(key, facts) for name, key in ORDER_KEYS.items()
                                                     if name in BY_VERDICT_ALONE)
            yield (seq, id_, category, verdict, number, offset, source, verify_offset,
                   *map(_group, per_line, repeat(facts)), *shared)
            seq += 1


def _row_columns() -> list[str]:
    """The queue's columns in the order `_rows` gives them: the orders keyed per line, then those per verdict."""
    orders = [name for name in ORDER_KEYS if name not in BY_VERDICT_ALONE]
    orders += [name for name in ORDER_KEYS if name in BY_VERDICT_ALONE]
    return ["seq", "id", "category", "verdict", "line", "offset", "source", "verify_offset",
            *map(order_column, orders)]


def _group(key: OrderKey, facts: Facts) -> int:
    try:
        return max(-LAST_GROUP, min(LAST_GROUP, int(key(facts))))
    except Exception:  # noqa: BLE001 - an order's key on unvalidated data: a failure sorts the candidate last
        return LAST_GROUP
