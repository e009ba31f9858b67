"""ProcessBench (`id`, `problem`, `steps`, `label`, `final_answer_correct`): `label` is the index of the first
wrong step, or -1 when every step is correct; only those are read."""
from __future__ import annotations

from injector.answer.final import final_answer_of_steps
from injector.model.trajectory import Trajectory
from injector.sources.reading import BadRecord, required, string_steps
from injector.sources.registry import ReadOptions, RecordFormat

_NEEDS = "ProcessBench records need problem, steps and label"


def detect(record: dict) -> bool:
    return "problem" in record and "steps" in record and "label" in record


def read(record: dict, origin: str, where: str, options: ReadOptions) -> Trajectory | str:
    """A ProcessBench solution whose steps are all correct, else the reason it is skipped."""
    problem = required(record, "problem", (str,), _NEEDS)
    steps = string_steps(required(record, "steps", (list,), _NEEDS), "steps")
    label = required(record, "label", (int,), _NEEDS)
    if isinstance(label, bool) or not -1 <= label < len(steps):
        raise BadRecord(f"label is {label!r}: the index of the first wrong step (0 to {len(steps) - 1}), or -1")
    if label != -1:
        return "not_all_correct"
    answer_correct = record.get("final_answer_correct")
    if answer_correct is False:  # correct steps but a wrong answer: not a solution to start from
        return "answer_wrong"
    trajectory_id = str(record.get("id") or f"processbench:{origin}")
    meta = {"idx": trajectory_id, "source_format": "processbench"}
    if record.get("generator") is not None:
        meta["generator"] = record["generator"]
    # The record has no reference answer; a solution known to reach the right one gives it.
    answer = final_answer_of_steps(steps) if answer_correct is True else None
    return Trajectory(id=trajectory_id, question=problem, steps=steps, answer=answer, meta=meta)


FORMAT = RecordFormat(
    name="processbench", detect=detect, read=read,
    description="ProcessBench records; the solutions whose every step is labelled correct (label -1).",
)
