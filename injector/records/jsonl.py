"""Reading a run directory's JSON lines, bounded and forgiving: a torn line (a write cut short by a kill) or a line
that is no record is skipped with a warning naming FILE:LINE (or, with `strict=True`, is an `InputError` naming it),
so no reader crashes on a received directory. Side files are read within a size cap, never through a link."""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Iterable, Iterator, TypeVar

from pydantic import BaseModel, ValidationError

from injector.records.models import CANDIDATES_FILE, Candidate, Rejection
from injector.util.errors import InputError, UserError
from injector.util.json_bounds import JsonRefused, loads_bounded
from injector.util.safe_files import MAX_SIDE_FILE_BYTES, open_read

log = logging.getLogger("injector")


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSONL file we wrote; a torn line (a write cut short by a kill) is skipped with a warning."""
    for _, record in read_jsonl_numbered(path):
        yield record


def read_jsonl_numbered(path: Path) -> Iterator[tuple[int, Any]]:
    """`read_jsonl` with the line number of each record; a line that is not UTF-8 is skipped as torn too (so is
    a last line another writer is still writing: it is not JSON until its end). A file that cannot be read at all
    is a `UserError`."""
    for number, _, value in _scan(path):
        yield number, value


def _scan(path: Path) -> Iterator[tuple[int, int, Any]]:
    """(line number, byte offset, decoded value) of every line of `path` that is JSON; see `read_jsonl_numbered`."""
    for number, start, raw, value in scan_lines(path):
        if value is not NOT_JSON:
            yield number, start, value


NOT_JSON: Any = object()
"""What `scan_lines` gives for a line that is blank, torn or refused (warned about, except a blank one)."""


def scan_lines(path: Path, start: int = 0, first: int = 1) -> Iterator[tuple[int, int, bytes, Any]]:
    """(line number, byte offset, raw line, decoded value or NOT_JSON) of every whole line of `path` from byte
    `start` (line number `first`) on."""
    if not path.exists():
        return
    try:  # never through a symlink, never a FIFO or a device; side files within a size cap
        handle = open_read(path, None if path.name == CANDIDATES_FILE else MAX_SIDE_FILE_BYTES)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror}); check it is a file you may read") from None
    offset = start
    with handle:
        handle.seek(start)
        for number, raw in enumerate(_lines(handle, path), first):
            line_start, offset = offset, offset + len(raw)
            line = raw.strip()
            if not line:
                yield number, line_start, raw, NOT_JSON
                continue
            try:
                yield number, line_start, raw, loads_bounded(line.decode("utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                log.warning("%s:%d: ignoring a torn line (an interrupted write); its unit will be redone", path, number)
                yield number, line_start, raw, NOT_JSON
            except JsonRefused as exc:  # never written by `inject run`: a received directory may hold anything
                log.warning("%s:%d: ignoring a line that is not a record (%s)", path, number, exc)
                yield number, line_start, raw, NOT_JSON


def _lines(handle: Any, path: Path) -> Iterator[bytes]:
    try:
        yield from handle
    except OSError as exc:  # e.g. an I/O error halfway, or a directory opened as a file on some systems
        raise UserError(f"{path}: cannot read it ({exc.strerror}); check it is a file you may read") from None


Record = TypeVar("Record", Candidate, Rejection)


def problem_of(exc: ValidationError) -> str:
    """The first thing a `ValidationError` found wrong, in one line: `field.path: what is wrong`."""
    problem = exc.errors()[0]
    message = str(problem["msg"]).removeprefix("Value error, ")
    where = ".".join(map(str, problem["loc"]))
    return f"{where}: {message}" if where else message


def read_records(path: Path, model: type[Record], *, strict: bool = False) -> Iterator[tuple[int, Record]]:
    """(line, record) for every line of a JSONL file of `model` records that validates as one.

    Torn lines are skipped as `read_jsonl` does. A line that is JSON but no `model` record (a wrong type, a missing
    field, not an object) is skipped with a warning naming FILE:LINE; with `strict`, it is an `InputError` instead
    (a build must not silently leave a record out).
    """
    for number, _, record in scan_records(path, model, strict=strict):
        yield number, record


def scan_records(path: Path, model: type[Record], *, strict: bool = False) -> Iterator[tuple[int, int, Record]]:
    """`read_records` with each record's byte offset, for readers that come back to one record later
    (`records_at`)."""
    for number, offset, value in _scan(path):
        record = as_record(path, number, value, model, strict)
        if record is not None:
            yield number, offset, record


def as_record(path: Path, number: int, value: Any, model: type[Record], strict: bool = False) -> Record | None:
    """`value` (line `number` of `path`) as a `model` record; None (with a warning naming FILE:LINE) when it is
    none, or with `strict` an `InputError`."""
    try:
        if not isinstance(value, dict):
            raise ValueError("a JSON object expected")
        return model.from_stored(value)
    except ValueError as exc:  # ValidationError is one
        problem = problem_of(exc) if isinstance(exc, ValidationError) else str(exc)
        message = f"not a {_noun(model)} record ({problem}); use a {path.name} written by `inject run`"
        if strict:
            raise InputError(str(path), number, message) from None
        log.warning("%s:%d: %s; skipped", path, number, message)
        return None


def records_at(path: Path, offsets: Iterable[int], model: type[Record]) -> Iterator[Record]:
    """The records on the lines starting at each byte offset of `path` (as `scan_records` gave them), read through
    one handle as they are asked for; a `UserError` if one is no longer there (the file was changed since)."""
    offset = None
    try:
        with open_read(path, None) as handle:  # never through a link, never a FIFO
            for offset in offsets:
                handle.seek(offset)
                yield model.from_stored(loads_bounded(handle.readline()))
    except (OSError, ValueError) as exc:  # ValidationError, JSONDecodeError and TooDeep are ValueErrors
        raise UserError(f"{path}: the {_noun(model)} at byte {offset} cannot be read any more ({exc}); the file "
                        "changed while it was open: start again") from None


def _noun(model: type[BaseModel]) -> str:
    return "candidate" if model is Candidate else "reject"
