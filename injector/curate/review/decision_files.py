"""Decision files: `inject review --export` writes them, `--import` reads them (.jsonl or .csv).

JSON lines are split on "\n" only: a reason or an edited step may hold U+2028, U+0085 or any other character
`str.splitlines` would break on, and an export must import again as it was.
"""
from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Iterable

from injector.util.errors import UserError, WriteFailed
from injector.util.json_bounds import JsonRefused, loads_bounded
from injector.util.safe_files import write_replacing
from injector.curate.review.store import FIELDS, Decision, ReviewStore, check_decision, to_row


def _format(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise UserError(f"{path}: decisions are exported and imported as .jsonl or .csv; rename the file")
    return suffix


def write_decisions(path: Path, decisions: list[Decision]) -> int:
    """Write decisions as JSONL (one object per line) or CSV (lists and edits as JSON text); returns the count."""
    suffix = _format(path)
    handle = io.StringIO(newline="")
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
            writer.writerow(["" if value is None else value for value in to_row(d)])
    try:  # whole or not at all (a full disk, a missing directory): never half an export under its name
        write_replacing(path, handle.getvalue().encode("utf-8"))
    except OSError as exc:
        raise WriteFailed(path, exc, "choose another FILE, or create its directory or free space") from None
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
        # "\n" only: str.splitlines() would also split at U+2028, U+0085 and others a JSON string may hold raw.
        lines = (line.removesuffix("\r") for line in text.split("\n"))
        numbered = ((n, line) for n, line in enumerate(lines, 1) if line.strip())
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
        given = {k: v for k, v in record.items()
                 if v is not None or k in ("corrected_error_steps", "edited_steps")}
        if given.get("role") == "":  # an empty CSV cell, or an export of an earlier version: a review
            del given["role"]
        return check_decision(Decision(**given))
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




def export_store(store: ReviewStore, path: Path) -> int:
    """Write every row of a store to a .jsonl or .csv file (by suffix); returns the count."""
    return write_decisions(Path(path), store.rows())


def import_file(store: ReviewStore, path: Path) -> int:
    """Append the rows of a file `export_store` wrote (rows already present are not added twice).

    Format checks only: the app's rules need the candidates, so `inject review --import` (`import_decisions`)
    puts each row through `ReviewSession.check` instead, and `build` re-checks whatever the store holds.
    """
    return store.add_new(read_decisions(Path(path)))
