"""Review decisions: one SQLite row per decision in `RUN_DIR/review.sqlite`, every reviewer's kept apart.

Rows are only ever appended (a changed mind is a new row), so the history of every candidate is kept. A decision is
keyed by candidate and reviewer: a reviewer's later decision replaces only their own earlier one. "Latest" means
the latest `time`, ties broken by insertion order: importing an older export never overrides newer work, a time
more than `CLOCK_SKEW` in the future is refused, and a decision made here is timed after every stored one on its
candidate, so no import can outrank it. An adjudicator's decision (`role` "adjudication") is final.

Stores written before reviewers were kept apart (no `role` column, `user_version` 0) are migrated when opened.
"""
from __future__ import annotations

import json
import logging
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

from injector.answer.align import align_steps
from injector.util.errors import UserError
from injector.util.safe_files import require_regular_or_missing
from injector.records.models import Candidate
from injector.util.json_bounds import loads_bounded
from injector.curate.review.schema import MIGRATE_TO_2, MIGRATE_TO_3, SCHEMA

log = logging.getLogger("injector")

STORE_FILE = "review.sqlite"
SQLITE_SIDE_FILES = ("-wal", "-shm", "-journal")
"""The files SQLite keeps beside a database (`review.sqlite-wal`, ...), opened by name."""
DECISIONS = ("accept", "reject")
ROLES = ("review", "adjudication")
FIELDS = ("id", "decision", "reason", "corrected_error_steps", "edited_steps", "reviewer", "time", "role")
OPTIONAL_FIELDS = ("role",)
"""Fields a file or a store of an earlier version may lack (their defaults apply)."""
SCHEMA_VERSION = 3
CLOCK_SKEW = timedelta(minutes=5)
"""How far in the future a decision's time may lie (another machine's clock): later ones are refused."""

ID_CHUNK = 500
"""Candidate ids per `IN (...)` query (SQLite caps the parameters of a statement)."""


@dataclass
class Decision:
    """A reviewer's verdict on one candidate; a correction is an accept carrying its corrections."""

    id: str
    decision: str
    reason: str = ""
    corrected_error_steps: list[int] | None = None
    """1-based into the (possibly edited) modified_process."""
    edited_steps: dict[int, str] | None = None
    """1-based step of modified_process -> its new text."""
    reviewer: str = ""
    time: str = ""
    """ISO 8601 UTC; filled in when recorded if empty."""
    role: str = "review"
    """`review`, or `adjudication`: an adjudicator's decision on a disputed candidate, which is final."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def normalize_time(value: str) -> str:
    """The same instant as ISO 8601 UTC with milliseconds, so times sort as strings; ValueError if unreadable."""
    parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)  # a naive time in an export is taken as UTC, as we write it
    return parsed.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def _after(time: str) -> str:
    """One millisecond after `time` (a normalized time)."""
    return (datetime.fromisoformat(time) + timedelta(milliseconds=1)).isoformat(timespec="milliseconds")


def check_decision(decision: Decision) -> Decision:
    """`decision` with its fields checked and normalized; ValueError says what is wrong."""
    if not isinstance(decision.id, str) or not decision.id:
        raise ValueError("id: expected a non-empty candidate id")
    if decision.decision not in DECISIONS:
        raise ValueError(f"decision: expected accept or reject, got {decision.decision!r}")
    if decision.role not in ROLES:
        raise ValueError(f"role: expected {' or '.join(ROLES)}, got {decision.role!r}")
    steps = decision.corrected_error_steps
    if steps is not None:
        if not isinstance(steps, list) or not all(_is_step(s) for s in steps):
            raise ValueError("corrected_error_steps: expected a list of step numbers (1-based) or nothing")
        steps = sorted({int(s) for s in steps})
    edits = decision.edited_steps
    if edits is not None:
        if not isinstance(edits, dict):
            raise ValueError("edited_steps: expected an object {step number: new text} or nothing")
        try:
            edits = {int(k): v for k, v in edits.items()}
        except (TypeError, ValueError):
            raise ValueError("edited_steps: keys must be step numbers (1-based)") from None
        if not all(k >= 1 and isinstance(v, str) for k, v in edits.items()):
            raise ValueError("edited_steps: expected step numbers >= 1 mapped to text")
        edits = dict(sorted(edits.items())) or None
    for name in ("reason", "reviewer", "time"):
        if not isinstance(getattr(decision, name), str):
            raise ValueError(f"{name}: expected text")
    time = normalize_time(decision.time) if decision.time else now_iso()
    latest_allowed = (datetime.now(timezone.utc) + CLOCK_SKEW).isoformat(timespec="milliseconds")
    if time > latest_allowed:
        raise ValueError(f"time {time} is in the future (more than {CLOCK_SKEW.seconds // 60} minutes ahead of this "
                         "machine's clock); check the clock of the machine that made it, or drop the row")
    return Decision(decision.id, decision.decision, decision.reason, steps, edits, decision.reviewer, time,
                    decision.role)


def _is_step(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


_BROKEN = ("not a database", "malformed", "no such table", "no such column", "file is encrypted")


def store_error(path: Path, exc: sqlite3.Error, doing: str) -> UserError:
    """What went wrong with the store, said so the user does the right thing: a full disk or a locked or
    unwritable file is no reason to move a healthy store aside; only a file that is no review store is."""
    if any(sign in str(exc).lower() for sign in _BROKEN):
        return UserError(f"{path}: cannot {doing} the review store ({exc}); it is not one `inject review` wrote: "
                         "move it aside (the decisions in it are then not used)")
    return UserError(f"{path}: cannot {doing} the review store ({exc}); the store is left as it was: free disk "
                     "space, or check the directory is writable and no other program holds the file, then try again")


def check_store_files(run_dir: str | Path) -> None:
    """Refuse a run directory whose review.sqlite, or one of the files SQLite keeps beside it, exists but is no
    regular file (`NotARegularFile`, a UserError): a received review.sqlite -> some other database, or a
    review.sqlite-wal -> a file of the user's, which SQLite would open by name, through the link, and write pages
    into."""
    path = Path(run_dir) / STORE_FILE
    for name in (path.name, *(path.name + suffix for suffix in SQLITE_SIDE_FILES)):
        require_regular_or_missing(path.with_name(name))


class ReviewStore:
    """`RUN_DIR/review.sqlite`; every call opens its own connection, so threads and processes may share it."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / STORE_FILE
        try:
            with closing(self._connect()) as db:
                db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer; persists in the file
                db.executescript(SCHEMA)
                columns = {row[1] for row in db.execute("PRAGMA table_info(decisions)")}
                missing = [name for name in ("seq", *FIELDS) if name not in columns and name not in OPTIONAL_FIELDS]
                if missing:  # a store received with a run directory may be anything
                    raise UserError(f"{self.path}: not a review store (its decisions table lacks "
                                    f"{', '.join(missing)}); move it aside (the decisions in it are then not used)")
                if "role" not in columns:  # written before reviewers were kept apart: every row was a review
                    db.executescript(MIGRATE_TO_2)
                if db.execute("PRAGMA user_version").fetchone()[0] < 3:
                    db.executescript(MIGRATE_TO_3)
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, "open") from None

    def connect(self) -> sqlite3.Connection:
        """A new connection to the store (the caller closes it): for the queue index kept beside the decisions."""
        return self._connect()

    def _connect(self) -> sqlite3.Connection:
        check_store_files(self.path.parent)
        return sqlite3.connect(self.path, timeout=30)

    def record(self, decision: Decision) -> Decision:
        """Append one decision made here and now, committed before this returns; returns it as stored.

        Its time is now, or just after the latest stored on its candidate when that is later (an import from a
        machine whose clock runs ahead): a decision made here is never outranked by an older one."""
        checked = check_decision(decision)
        try:
            with closing(self._connect()) as db, db:
                (latest,) = db.execute("SELECT max(time) FROM decisions WHERE id = ?", (checked.id,)).fetchone()
                if isinstance(latest, str) and latest >= checked.time:
                    checked.time = _after(normalize_time(latest))
                db.execute(_INSERT, to_row(checked))
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, "write to") from None
        return checked

    def add_all(self, decisions: Iterable[Decision]) -> int:
        """Append decisions in one transaction (all or none); returns how many."""
        rows = [to_row(check_decision(d)) for d in decisions]
        try:
            with closing(self._connect()) as db, db:
                db.executemany(_INSERT, rows)
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, "write to") from None
        return len(rows)

    def rows(self, candidate_id: str | None = None) -> list[Decision]:
        """Every decision (or a candidate's), oldest first. A store is a file received with a run directory: a
        row that is no decision is skipped with a warning naming it, a store that cannot be read is a UserError."""
        if candidate_id is not None:
            return self._select("WHERE id = ?", (candidate_id,))
        return self._select("", ())

    def _select(self, where: str, args: Sequence[Any], skipped: list[Any] | None = None) -> list[Decision]:
        """The decisions of the rows `where` picks, oldest first; the ids of rows that are none go to `skipped`."""
        try:
            with closing(self._connect()) as db:
                found = db.execute(f"SELECT seq, {', '.join(FIELDS)} FROM decisions {where} ORDER BY time, seq",
                                   tuple(args)).fetchall()
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, "read") from None
        decisions = []
        for seq, *row in found:
            try:
                decisions.append(_from_row(tuple(row)))
            except (ValueError, TypeError, AttributeError) as exc:
                log.warning("%s: decision row %s is not a decision (%s); ignored", self.path, seq, exc)
                if skipped is not None:
                    skipped.append(row[0])
        return decisions

    def _rows_of(self, ids: Iterable[str], reviewer: str | None = None, role: str = "review") -> list[Decision]:
        """The decisions on these candidates only (by the id index), oldest first; one reviewer's in `role` when
        `reviewer` is given."""
        wanted = list(dict.fromkeys(ids))
        found: list[Decision] = []
        for start in range(0, len(wanted), ID_CHUNK):
            chunk = wanted[start:start + ID_CHUNK]
            where = f"WHERE id IN ({', '.join('?' * len(chunk))})"
            if reviewer is not None:
                where, chunk = where + " AND reviewer = ? AND role = ?", [*chunk, reviewer, role]
            found += self._select(where, chunk)
        return found  # a candidate's rows all come from one chunk, oldest first: no merge needed

    def latest(self) -> dict[str, Decision]:
        """The decision per candidate id that stands: the latest adjudication, else the latest of any reviewer."""
        return _standing(self.rows())

    def standing_decisions(self) -> dict[str, Decision]:
        """`latest`, read through the standing table the triggers keep (a row per decided candidate, not the
        history). A candidate whose standing row is no decision is read as `latest_for` reads it; a standing table
        that does not follow the history (a received store) is not used."""
        skipped: list[Any] = []
        found = {d.id: d for d in self._select("WHERE (seq, id) IN (SELECT seq, id FROM standing)", (), skipped)}
        if len(found) + len(skipped) != self._query("SELECT count(*) FROM standing")[0][0]:
            return self.latest()
        found.update(self.latest_for(id_ for id_ in skipped if isinstance(id_, str)))
        return found

    def latest_for(self, ids: Iterable[str]) -> dict[str, Decision]:
        """`latest` for these candidates only, reading their rows alone."""
        return _standing(self._rows_of(ids))

    def latest_of_for(self, ids: Iterable[str], reviewer: str, role: str = "review") -> dict[str, Decision]:
        """`latest_of` for these candidates only, reading their rows alone."""
        return {d.id: d for d in self._rows_of(ids, reviewer, role)}

    def register(self, candidates: Iterable[tuple[str, str]]) -> None:
        """Note the (id, category) of the candidates under review, for `progress`."""
        try:
            with closing(self._connect()) as db, db:
                db.executemany("INSERT OR IGNORE INTO candidates (id, category) VALUES (?, ?)", candidates)
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, "write to") from None

    def progress(self) -> list[tuple[str, str, int]]:
        """(category, decision, how many) of the standing decisions on registered candidates, kept by triggers."""
        return self._query("SELECT category, decision, n FROM tally")

    def decided(self) -> dict[str, str]:
        """Candidate id -> its standing decision (accept or reject), unparsed: what a status filter needs."""
        return {id_: decision for id_, decision in self._query("SELECT id, decision FROM standing")}

    def _query(self, sql: str) -> list[Any]:
        try:
            with closing(self._connect()) as db:
                return db.execute(sql).fetchall()
        except sqlite3.Error as exc:
            raise store_error(self.path, exc, "read") from None

    def latest_of(self, reviewer: str, role: str = "review") -> dict[str, Decision]:
        """One reviewer's latest decision (in `role`) per candidate id, blind to everyone else's (their rows
        alone are read)."""
        return {d.id: d for d in self._select("WHERE reviewer = ? AND role = ?", (reviewer, role))}

    def latest_in_plan(self, reviewer: str) -> dict[str, Decision]:
        """`latest_of(reviewer)` on the candidates of their queue of the run's review plan: the rows the queue's
        index points at (`plan_index.py`: each entry's own standing review), read through its key."""
        return {d.id: d for d in self._select(
            "WHERE seq IN (SELECT own_seq FROM plan_queue WHERE reviewer = ? AND own_seq >= 0)", (reviewer,))}

    def reviews_for(self, ids: Iterable[str]) -> dict[str, dict[str, Decision]]:
        """`latest_per_reviewer` for these candidates only, reading their rows alone."""
        return latest_per_reviewer(self._rows_of(ids))

    def history(self, candidate_id: str) -> list[Decision]:
        return self.rows(candidate_id)

    def add_new(self, decisions: Iterable[Decision]) -> int:
        """Append the decisions this store does not hold yet (same fields); returns how many were appended."""
        have = {_key(d) for d in self.rows()}
        fresh = []
        for decision in decisions:
            key = _key(check_decision(decision))
            if key not in have:
                have.add(key)
                fresh.append(decision)
        return self.add_all(fresh)


def _standing(decisions: Iterable[Decision]) -> dict[str, Decision]:
    """The standing decision per candidate id of `decisions` (oldest first): the latest adjudication, else the
    latest of any reviewer."""
    found: dict[str, Decision] = {}
    for decision in decisions:
        standing = found.get(decision.id)
        if standing is None or decision.role == "adjudication" or standing.role != "adjudication":
            found[decision.id] = decision
    return found


_INSERT = f"INSERT INTO decisions ({', '.join(FIELDS)}) VALUES ({', '.join('?' * len(FIELDS))})"


def latest_per_reviewer(decisions: Iterable[Decision]) -> dict[str, dict[str, Decision]]:
    """Candidate id -> reviewer -> that reviewer's latest review decision (`decisions` oldest first)."""
    found: dict[str, dict[str, Decision]] = {}
    for decision in decisions:
        if decision.role == "review":
            found.setdefault(decision.id, {})[decision.reviewer] = decision
    return found


def _key(decision: Decision) -> tuple:
    return tuple(to_row(decision))


def to_row(d: Decision) -> list[Any]:
    edits = None if d.edited_steps is None else json.dumps({str(k): v for k, v in d.edited_steps.items()},
                                                           ensure_ascii=False)
    steps = None if d.corrected_error_steps is None else json.dumps(d.corrected_error_steps)
    return [d.id, d.decision, d.reason, steps, edits, d.reviewer, d.time, d.role]


def _from_row(row: tuple) -> Decision:
    """The decision a stored row holds, checked as one from a file is; ValueError/TypeError if it is none."""
    id_, decision, reason, steps, edits, reviewer, time, role = row
    if edits is not None:
        edits = loads_bounded(edits)
        if not isinstance(edits, dict):
            raise ValueError("edited_steps: expected an object {step number: new text}")
    return check_decision(Decision(id_, decision, reason, None if steps is None else loads_bounded(steps),
                                   edits, reviewer, time, role))


def apply_decision(candidate: Candidate, decision: Decision) -> Candidate:
    """A copy of `candidate` with the decision's step edits and error-step correction applied.

    Edits replace step texts in place (never insert or delete), so indices keep their meaning; the changed steps
    are recomputed from the text as the validator does (a step edited back to its original is unchanged again).
    """
    update: dict[str, Any] = {}
    if decision.edited_steps:
        # Only edits change which steps differ; without them the candidate's own modified_steps stand (in edit mode
        # they are exact, which an alignment of repeated step texts could blur).
        process = list(candidate.modified_process)
        for step, text in decision.edited_steps.items():
            if 1 <= step <= len(process):
                process[step - 1] = text
        original = list(candidate.original_process)
        alignment = align_steps(original, process)
        for j, i in alignment.matched.items():
            process[j] = original[i]  # unchanged steps keep the source's exact text, as validate_answer does
        deleted = [i + 1 for i in sorted(alignment.deleted)]
        warnings = [w for w in candidate.warnings if not w.startswith("deleted original steps:")]
        if deleted:
            warnings.append(f"deleted original steps: {', '.join(map(str, deleted))}")
        update.update(modified_process=process, modified_steps=[j + 1 for j in alignment.changed],
                      warnings=warnings)
    if decision.corrected_error_steps is not None:
        update["error_steps"] = sorted(set(decision.corrected_error_steps))
        if candidate.explanations is not None:
            kept = {str(s) for s in update["error_steps"]}
            update["explanations"] = {k: v for k, v in candidate.explanations.items() if k in kept}
    return candidate.model_copy(update=update, deep=True)


__all__ = ["Decision", "ReviewStore", "apply_decision", "latest_per_reviewer"]
