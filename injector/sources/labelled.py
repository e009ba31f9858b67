"""Reading labelled files: an `inject build` split's JSONL rows, PRMBench records and ProcessBench records, one record
at a time with its FILE:LINE, the format told from each file's first record.

One reader for the three places that read these files: `inject eval` (evaluate/splits.py), `inject stats`
(curate/stats.py) and the step audit's label-noise estimate (triage/step_audit/noise.py). A line that is not JSON,
not an object or of no known format is an `InputError` naming FILE:LINE (exit 2).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from injector.util.errors import InputError, UserError
from injector.util.json_bounds import jsonl_lines

LABELLED_FORMATS = ("split", "prmbench", "processbench")
UNKNOWN_FORMAT = ("not a labelled record: expected an `inject build` row (id, category, modified_process, error_steps), "
                  "a PRMBench record (idx, classification, modified_process, error_steps) or a ProcessBench one (id, "
                  "steps, label)")


def detect_labelled_format(record: Any) -> str | None:
    """The format of a record: an `inject build` row, a PRMBench record or a ProcessBench one (None: none)."""
    if not isinstance(record, dict):
        return None
    if "steps" in record and "label" in record:
        return "processbench"
    if "modified_process" in record and "id" in record and "category" in record:
        return "split"
    if "modified_process" in record and "classification" in record:
        return "prmbench"
    return None


def labelled_files(path: Path) -> list[Path]:
    """A JSONL file, or the `*.jsonl` files of a directory (PRMBench's data directory, a split's export)."""
    if path.is_file():
        return [path]
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else []
    if not files:
        raise UserError(f"{path}: neither a JSONL file nor a directory of JSONL files")
    return files


@dataclass(frozen=True)
class LabelledLine:
    """One record of a labelled file, where it was, and its format."""

    path: Path
    number: int
    fmt: str
    record: dict[str, Any] = field(repr=False)


def labelled_lines(path: Path) -> Iterator[LabelledLine]:
    """Every record of a labelled file (or directory of them), each file's format told from its first record."""
    for file in labelled_files(Path(path)):
        fmt = None
        for number, record in jsonl_lines(file):
            fmt = fmt or detect_labelled_format(record)
            if fmt is None:
                raise InputError(file, number, UNKNOWN_FORMAT)
            if not isinstance(record, dict):
                raise InputError(file, number, f"expected a JSON object, found {type(record).__name__}")
            yield LabelledLine(file, number, fmt, record)


def check_prmbench_fields(record: Any, path: Path, number: int) -> None:
    """The fields a PRMBench record must have for its numbers to mean anything; an `InputError` otherwise."""
    if not isinstance(record, dict) or not isinstance(record.get("classification"), str):
        raise InputError(path, number, "a PRMBench record needs a classification string, "
                         "original_process, modified_process and error_steps")
    for name in ("original_process", "modified_process"):
        if not isinstance(record.get(name), list) or not all(isinstance(s, str) for s in record[name]):
            raise InputError(path, number, f"{name} must be a list of step strings")
    check_error_steps(record, path, number)


def check_error_steps(record: dict[str, Any], path: Path, number: int) -> None:
    errors = record.get("error_steps")
    if not isinstance(errors, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in errors):
        raise InputError(path, number, "error_steps must be a list of 1-based step numbers")


@dataclass(frozen=True)
class StepRecord:
    """A labelled record as the step audit reads it: steps, 1-based error steps (as given, past the end included)
    and the steps the edit changed (none known for ProcessBench)."""

    id: str
    category: str
    modified_process: list[str]
    error_steps: list[int]
    modified_steps: list[int]


def step_record(line: LabelledLine, by_classification: dict[str, str] | None = None) -> StepRecord:
    """`line` as a `StepRecord`: PRMBench's classification mapped to a category id through `by_classification`,
    a ProcessBench record's category its file's name (ProcessBench ships one file per subset)."""
    record, where = line.record, (line.path, line.number)
    if line.fmt == "processbench":
        steps = _string_steps(record.get("steps"), "steps", *where)
        label = record.get("label")
        if not isinstance(label, int) or isinstance(label, bool) or not -1 <= label < len(steps):
            raise InputError(*where, f"`label` must be the 0-based index of the first wrong step (0..{len(steps) - 1})"
                                     f" or -1 for none, found {label!r}")
        return StepRecord(str(record.get("id", f"{line.path.name}:{line.number}")), line.path.stem, steps,
                          [label + 1] if label >= 0 else [], [])
    steps = _string_steps(record.get("modified_process"), "modified_process", *where)
    check_error_steps(record, *where)
    modified = record.get("modified_steps") or []
    if not isinstance(modified, list) or not all(isinstance(k, int) and not isinstance(k, bool) for k in modified):
        raise InputError(*where, "modified_steps must be a list of 1-based step numbers")
    if line.fmt == "prmbench":
        classification = str(record.get("classification"))
        category = (by_classification or {}).get(classification, classification)
        item_id = f"{record.get('idx')}::{classification}"
    else:
        category, item_id = str(record.get("category")), str(record.get("id"))
    return StepRecord(item_id, category, steps, list(record["error_steps"]), list(modified))


def _string_steps(steps: Any, name: str, path: Path, number: int) -> list[str]:
    if not isinstance(steps, list) or not steps or not all(isinstance(step, str) for step in steps):
        raise InputError(path, number, f"`{name}` must be a non-empty list of step texts")
    return steps
