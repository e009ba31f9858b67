"""PRMBench (`original_question`, `original_process`, `idx`, `ground_truth`): the original, correct solution of
each record, its text kept verbatim."""
from __future__ import annotations

import hashlib
from typing import Any

from injector.model.trajectory import Trajectory
from injector.sources.reading import BadRecord, required, string_steps
from injector.sources.registry import ReadOptions, RecordFormat

_NEEDS = "PRMBench records need original_question and original_process"


def detect(record: dict) -> bool:
    return "original_process" in record


def read(record: dict, origin: str, where: str, options: ReadOptions) -> Trajectory:
    """The original (correct) solution of a PRMBench record."""
    question = required(record, "original_question", (str,), _NEEDS)
    steps = string_steps(required(record, "original_process", (list,), _NEEDS), "original_process")
    idx = record.get("idx")
    if idx is None:
        idx = origin
    # The same idx carries different echoed texts across category files, so the text goes into the id.
    text_hash = hashlib.sha256((question + "\n" + "\n".join(steps)).encode("utf-8")).hexdigest()[:8]
    meta: dict[str, Any] = {"idx": idx, "source_format": "prmbench"}
    for key in ("question", "classification"):
        if record.get(key) is not None:
            meta[key] = record[key]
    answer = record.get("ground_truth")
    if answer is not None and not isinstance(answer, (str, int, float)):
        raise BadRecord(f"field 'ground_truth' must be a string, not {type(answer).__name__}")
    return Trajectory(id=f"{idx}-{text_hash}", question=question, steps=steps,
                      answer=None if answer is None else str(answer), meta=meta)


FORMAT = RecordFormat(
    name="prmbench", detect=detect, read=read,
    description="PRMBench records; the original (correct) solution of each is read, its text kept verbatim.",
)
