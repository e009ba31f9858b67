"""ProJudgeBench (`question`, `image_paths`, `subject`, `process_evaluation` = [step, "1"|"0", error type,
explanation] per step): kept only when every step is labelled "1"."""
from __future__ import annotations

from injector.model.trajectory import Trajectory
from injector.sources.reading import BadRecord, required, resolve_images
from injector.sources.registry import ReadOptions, RecordFormat

_NEEDS = "ProJudgeBench records need question and process_evaluation"


def detect(record: dict) -> bool:
    return "process_evaluation" in record and "question" in record


def read(record: dict, origin: str, where: str, options: ReadOptions) -> Trajectory | str:
    """A ProJudgeBench-style record whose steps are all correct, else "not_all_correct"."""
    question = required(record, "question", (str,), _NEEDS)
    evaluation = required(record, "process_evaluation", (list,), _NEEDS)
    if not evaluation:
        raise BadRecord("process_evaluation is empty; a trajectory needs at least one step")
    steps = []
    for number, item in enumerate(evaluation, 1):
        if not isinstance(item, list) or len(item) < 2 or not isinstance(item[0], str):
            raise BadRecord(f"process_evaluation step {number} must be [step, \"1\"|\"0\", error type, explanation]")
        steps.append(item[0])
    if any(str(item[1]) != "1" for item in evaluation):
        return "not_all_correct"
    trajectory_id = str(record.get("id") or f"projudgebench:{origin}")
    subject = record.get("subject")
    return Trajectory(id=trajectory_id, question=question, steps=steps, subject=subject if subject else None,
                      images=resolve_images(record.get("image_paths") or [], where, options.image_base),
                      meta={"idx": trajectory_id, "source_format": "projudgebench"})


FORMAT = RecordFormat(
    name="projudgebench", detect=detect, read=read,
    description="ProJudgeBench-style multimodal, multi-discipline records; those whose steps are all labelled "
                "correct.",
)
