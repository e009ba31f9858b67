"""The source problem a record or trajectory comes from: one key for every copy of one problem.

PRMBench echoes one problem's solution differently in each category file, and PRM800K holds many solutions of one
problem, so neither a trajectory id nor a record id identifies the problem. The normalised question text does:
anything grouped or split by problem (cue-probe folds, dev/test parts) uses `problem_key`.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import TYPE_CHECKING, Any, Mapping

if TYPE_CHECKING:
    from injector.model.trajectory import Trajectory

# What copies of one question differ in (PRMBench's category files echo a question with and without its `$`
# delimiters, spacing and answer choices): none of it names a different problem.
_LITERAL_NEWLINE = re.compile(r"\\n(?![a-z])")  # "\\n" written out; "\\neq" stays
_NOT_CONTENT = re.compile(r"[^a-z0-9]+")  # delimiters, braces, backslashes, spacing, punctuation
_CHOICES = re.compile(r"(?:\\textbf\{)?\(a\)\s*\}?.*\(b\).*$", re.DOTALL)


def normalised_question(question: str) -> str:
    """The question text with Unicode compatibility forms and case folded, math delimiters and whitespace
    dropped (only letters and digits are kept), and a trailing list of answer choices ("(A) ... (B) ...") cut."""
    text = _LITERAL_NEWLINE.sub(" ", unicodedata.normalize("NFKC", question))
    return _NOT_CONTENT.sub("", _CHOICES.sub("", text.casefold()))


def problem_key(question: str) -> str:
    """A short stable key for the problem a question states (the same for every copy of the question)."""
    digest = hashlib.sha256(normalised_question(question).encode("utf-8")).hexdigest()
    return f"q{digest[:16]}"


def record_problem_key(record: Mapping[str, Any]) -> str | None:
    """The problem key of a candidate, split row or PRMBench record; None when it names no problem (the caller
    decides what stands in).

    A record whose `idx` is not its own trajectory id was given that idx by its source as the problem's name
    (PRMBench's records, and candidates made from them, whose echoed texts differ between category files even in
    the question): the key is the idx. Otherwise it is the key of its original (unmodified) question, else of its
    `question`: PRM800K's many solutions of one problem share it."""
    idx = record.get("idx")
    if isinstance(idx, (str, int)) and not isinstance(idx, bool) and str(idx) \
            and str(idx) != str(record.get("trajectory_id", "")):
        return f"idx:{idx}"
    for field in ("original_question", "question"):
        value = record.get(field)
        if isinstance(value, str) and value.strip():
            return problem_key(value)
    return None


def trajectory_problem_key(trajectory: "Trajectory") -> str:
    """The problem key of a source trajectory, as every candidate made from it records it (`Candidate.problem_key`):
    its source's idx when that names the problem (PRMBench), else its question's key."""
    key = record_problem_key({"idx": trajectory.meta.get("idx", trajectory.id), "trajectory_id": trajectory.id,
                              "original_question": trajectory.question})
    return key or problem_key(trajectory.question)


def row_problem_key(row: Mapping[str, Any]) -> str:
    """The problem key of a candidate or split row: the recorded `problem_key`, else (runs and splits written
    before candidates recorded it) derived as the candidate would have recorded it, from its source's idx
    (`source_idx` in a split row, whose `idx` may carry a `_2` suffix), trajectory id and original question; the
    trajectory id when nothing names a problem."""
    recorded = row.get("problem_key")
    if isinstance(recorded, str) and recorded:
        return recorded
    derived = record_problem_key({"idx": row.get("source_idx", row.get("idx")),
                                  "trajectory_id": row.get("trajectory_id"),
                                  "original_question": row.get("original_question")})
    return derived or str(row.get("trajectory_id") or row.get("id") or "")
