"""Review decisions: one SQLite row per decision in `RUN_DIR/review.sqlite`, the latest per candidate wins.

Rows are only ever appended (a changed mind is a new row), so the history of every candidate is kept. "Latest"
means the latest `time`, ties broken by insertion order: importing an older export never overrides newer work.
"""
from __future__ import annotations

import csv
import io
import json
import logging
import sqlite3
from contextlib import closing
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

from injector.answer.align import align_steps
from injector.util.errors import UserError
from injector.util.safe_files import require_regular_or_missing
from injector.records.models import Candidate
from injector.util.json_bounds import JsonRefused, loads_bounded

log = logging.getLogger("injector")

STORE_FILE = "review.sqlite"
DECISIONS = ("accept", "reject")
FIELDS = ("id", "decision", "reason", "corrected_error_steps", "edited_steps", "reviewer", "time")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    corrected_error_steps TEXT,
    edited_steps TEXT,
    reviewer TEXT NOT NULL DEFAULT '',
    time TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_by_id ON decisions (id);
"""


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


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def normalize_time(value: str) -> str:
    """The same instant as ISO 8601 UTC with milliseconds, so times sort as strings; ValueError if unreadable."""
    parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)  # a naive time in an export is taken as UTC, as we write it
    return parsed.astimezone(timezone.utc).isoformat(timespec="milliseconds")


def check_decision(decision: Decision) -> Decision:
    """`decision` with its fields checked and normalized; ValueError says what is wrong."""
    if not isinstance(decision.id, str) or not decision.id:
        raise ValueError("id: expected a non-empty candidate id")
    if decision.decision not in DECISIONS:
        raise ValueError(f"decision: expected accept or reject, got {decision.decision!r}")
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
    return Decision(decision.id, decision.decision, decision.reason, steps, edits, decision.reviewer, time)


def _is_step(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


class ReviewStore:
    """`RUN_DIR/review.sqlite`; every call opens its own connection, so threads and processes may share it."""

    def __init__(self, run_dir: str | Path):
        self.path = Path(run_dir) / STORE_FILE
        try:
            with closing(self._connect()) as db:
                db.execute("PRAGMA journal_mode=WAL")  # readers never block the writer; persists in the file
                db.executescript(_SCHEMA)
                columns = {row[1] for row in db.execute("PRAGMA table_info(decisions)")}
        except sqlite3.Error as exc:
            raise UserError(f"{self.path}: cannot open the review store ({exc}); check the directory is writable "
                            "and the file is a review store") from None
        missing = [name for name in ("seq", *FIELDS) if name not in columns]
        if missing:  # a store received with a run directory may be anything
            raise UserError(f"{self.path}: not a review store (its decisions table lacks {', '.join(missing)}); "
                            "move it aside (the decisions in it are then not used)")

    def _connect(self) -> sqlite3.Connection:
        require_regular_or_missing(self.path)  # a received review.sqlite -> some other database: refused
        return sqlite3.connect(self.path, timeout=30)

    def record(self, decision: Decision) -> None:
        """Append one decision, committed before this returns."""
        self.add_all([decision])

    def add_all(self, decisions: Iterable[Decision]) -> int:
        """Append decisions in one transaction (all or none); returns how many."""
        rows = [_to_row(check_decision(d)) for d in decisions]
        with closing(self._connect()) as db, db:
            db.executemany(f"INSERT INTO decisions ({', '.join(FIELDS)}) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        return len(rows)

    def rows(self, candidate_id: str | None = None) -> list[Decision]:
        """Every decision (or a candidate's), oldest first. A store is a file received with a run directory: a
        row that is no decision is skipped with a warning naming it, a store that cannot be read is a UserError."""
        where, args = ("WHERE id = ?", (candidate_id,)) if candidate_id is not None else ("", ())
        try:
            with closing(self._connect()) as db:
                found = db.execute(f"SELECT seq, {', '.join(FIELDS)} FROM decisions {where} ORDER BY time, seq",
                                   args).fetchall()
        except sqlite3.Error as exc:
            raise UserError(f"{self.path}: cannot read the review store ({exc}); it is not one `inject review` "
                            "wrote: move it aside (the decisions in it are then not used)") from None
        decisions = []
        for seq, *row in found:
            try:
                decisions.append(_from_row(tuple(row)))
            except (ValueError, TypeError, AttributeError) as exc:
                log.warning("%s: decision row %s is not a decision (%s); ignored", self.path, seq, exc)
        return decisions

    def latest(self) -> dict[str, Decision]:
        """The latest decision per candidate id."""
        return {decision.id: decision for decision in self.rows()}

    def history(self, candidate_id: str) -> list[Decision]:
        return self.rows(candidate_id)

    def export(self, path: Path) -> int:
        """Write every row to a .jsonl or .csv file (by suffix); returns the count."""
        return write_decisions(Path(path), self.rows())

    def import_(self, path: Path) -> int:
        """Append the rows of a file written by `export` (rows already present are not added twice).

        Format checks only: the app's rules need the candidates, so `inject review --import` (`import_decisions`)
        puts each row through `ReviewSession.check` instead, and `build` re-checks whatever the store holds.
        """
        return self.add_new(read_decisions(Path(path)))

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


def _key(decision: Decision) -> tuple:
    return tuple(_to_row(decision))


def _to_row(d: Decision) -> list[Any]:
    edits = None if d.edited_steps is None else json.dumps({str(k): v for k, v in d.edited_steps.items()},
                                                           ensure_ascii=False)
    steps = None if d.corrected_error_steps is None else json.dumps(d.corrected_error_steps)
    return [d.id, d.decision, d.reason, steps, edits, d.reviewer, d.time]


def _from_row(row: tuple) -> Decision:
    """The decision a stored row holds, checked as one from a file is; ValueError/TypeError if it is none."""
    id_, decision, reason, steps, edits, reviewer, time = row
    if edits is not None:
        edits = loads_bounded(edits)
        if not isinstance(edits, dict):
            raise ValueError("edited_steps: expected an object {step number: new text}")
    return check_decision(Decision(id_, decision, reason, None if steps is None else loads_bounded(steps),
                                   edits, reviewer, time))


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise UserError(f"{path}: decisions are exported and imported as .jsonl or .csv; rename the file")
    return suffix


def write_decisions(path: Path, decisions: list[Decision]) -> int:
    """Write decisions as JSONL (one object per line) or CSV (lists and edits as JSON text); returns the count."""
    suffix = _format(path)
    with path.open("w", encoding="utf-8", newline="") as handle:
        if suffix == ".jsonl":
            for d in decisions:
                record = asdict(d)
                if d.edited_steps is not None:
                    record["edited_steps"] = {str(k): v for k, v in d.edited_steps.items()}
                handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            writer = csv.writer(handle)
            writer.writerow(FIELDS)
            for d in decisions:
                id_, decision, reason, steps, edits, reviewer, time = _to_row(d)
                writer.writerow([id_, decision, reason, steps or "", edits or "", reviewer, time])
    return len(decisions)


def read_decisions(path: Path) -> list[Decision]:
    """Decisions from a .jsonl or .csv file; anything wrong is a UserError naming FILE:LINE."""
    return [decision for _, decision in read_numbered(path)]


def read_numbered(path: Path) -> list[tuple[int, Decision]]:
    """`read_decisions` with the line each decision was read from; the first bad row is a UserError."""
    decisions = []
    for number, row in read_rows(path):
        if isinstance(row, str):
            raise UserError(f"{path}:{number}: {row}")
        decisions.append((number, row))
    return decisions


def read_rows(path: Path) -> list[tuple[int, Decision | str]]:
    """(line, decision) per row of a .jsonl or .csv file, or (line, what is wrong with it) for a bad row.

    A file that cannot be read as a whole (no such file, not UTF-8, no CSV header, a CSV field longer than
    MAX_FIELD) is a UserError naming FILE[:LINE].
    """
    suffix = _format(path)
    text = _read_text(path)
    rows: list[tuple[int, Decision | str]] = []
    if suffix == ".jsonl":
        numbered = ((n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip())
        records: Iterable[tuple[int, dict[str, Any] | str]] = ((n, _json_record(line)) for n, line in numbered)
    else:
        records = _csv_records(path, text)
    for number, record in records:
        try:
            rows.append((number, _decision_of(record)))
        except ValueError as exc:
            rows.append((number, str(exc)))
    return rows


MAX_FIELD = 16 * 1024 * 1024
"""The longest CSV field read (an edited step's text); csv's own default, 128 KiB, is below what the app saves."""


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise UserError(f"{path}: no such file; give a file written by `inject review --export`")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror}); check the file's permissions") from None
    try:
        return data.decode("utf-8-sig")  # a spreadsheet's CSV export may start with a byte-order mark
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserError(f"{path}:{line}: not UTF-8 text (byte {exc.start}); save the file as UTF-8 and import it "
                        "again") from None


def _csv_records(path: Path, text: str) -> list[tuple[int, dict[str, Any] | str]]:
    """(line, record or what is wrong) per CSV row; a row's line is the line it starts on."""
    previous = csv.field_size_limit()
    csv.field_size_limit(MAX_FIELD)
    start = 1
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [f for f in ("id", "decision") if f not in (reader.fieldnames or [])]
        if missing:
            raise UserError(f"{path}:1: the header lacks {', '.join(missing)}; expected {','.join(FIELDS)}")
        records: list[tuple[int, dict[str, Any] | str]] = []
        start = reader.line_num + 1
        for row in reader:
            records.append((start, _csv_record(row)))
            start = reader.line_num + 1
        return records
    except csv.Error as exc:
        raise UserError(f"{path}:{start}: not readable as CSV ({exc}); a field may be at most "
                        f"{MAX_FIELD / 2**20:g} MiB") from None
    finally:
        csv.field_size_limit(previous)


def _decision_of(record: dict[str, Any] | str) -> Decision:
    """A checked decision from a row's fields; ValueError says what is wrong (a str record is already that)."""
    if isinstance(record, str):
        raise ValueError(record)
    unknown = sorted(set(record) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field {', '.join(unknown)}; expected {', '.join(FIELDS)}")
    missing = [name for name in ("id", "decision") if not record.get(name)]
    if missing:
        raise ValueError(f"{' and '.join(missing)} missing; every row needs id and decision")
    try:
        return check_decision(Decision(**{k: v for k, v in record.items()
                                          if v is not None or k in ("corrected_error_steps", "edited_steps")}))
    except TypeError as exc:
        raise ValueError(str(exc)) from None


def _json_record(line: str) -> dict[str, Any] | str:
    """A JSONL row's fields, or what is wrong with it."""
    try:
        record = loads_bounded(line)
    except json.JSONDecodeError as exc:
        return f"not valid JSON ({exc.msg})"
    except JsonRefused as exc:
        return f"not usable JSON (it {exc})"
    if not isinstance(record, dict):
        return f"expected a JSON object with the fields {', '.join(FIELDS)}"
    return record


def _csv_record(row: dict[str, Any]) -> dict[str, Any] | str:
    """A CSV row's fields (lists and edits decoded from their JSON text), or what is wrong with it."""
    if None in row:
        return "more values than header fields"
    record: dict[str, Any] = {k: ("" if v is None else v) for k, v in row.items()}
    for name in ("corrected_error_steps", "edited_steps"):
        text = record.get(name, "")
        try:
            record[name] = loads_bounded(text) if text.strip() else None
        except ValueError:  # malformed, or past the JSON limits
            example = '[2, 5]' if name == "corrected_error_steps" else '{"3": "new text"}'
            return f"{name}: not JSON (expected e.g. {example})"
    return record


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


__all__ = ["Decision", "ReviewStore", "apply_decision", "read_decisions", "write_decisions"]
