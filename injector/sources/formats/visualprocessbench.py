"""VisualProcessBench (`image`, `question`, `answer`, `response.steps`, `response.process_correctness`): kept only
when every step is labelled correct (1)."""
from __future__ import annotations

from injector.model.trajectory import Trajectory
from injector.sources.reading import BadRecord, required, resolve_images
from injector.sources.registry import ReadOptions, RecordFormat

_NEEDS = "VisualProcessBench records need question, response.steps and response.process_correctness"


def detect(record: dict) -> bool:
    return isinstance(record.get("response"), dict) and "process_correctness" in record["response"]


def read(record: dict, origin: str, where: str, options: ReadOptions) -> Trajectory | str:
    """A VisualProcessBench-style record whose steps are all correct, else "not_all_correct"."""
    question = required(record, "question", (str,), _NEEDS)
    steps = required(record, "response.steps", (list,), _NEEDS)
    labels = required(record, "response.process_correctness", (list,), _NEEDS)
    if not steps or not all(isinstance(step, str) for step in steps):
        raise BadRecord("response.steps must be a non-empty list of strings")
    if len(labels) != len(steps):
        raise BadRecord(f"response.process_correctness has {len(labels)} labels for {len(steps)} steps")
    if any(label != 1 for label in labels):
        return "not_all_correct"
    images = record.get("image") or []
    images = [images] if isinstance(images, str) else images
    answer = record.get("answer")
    trajectory_id = str(record.get("id") or f"visualprocessbench:{origin}")
    meta = {"idx": trajectory_id, "source_format": "visualprocessbench"}
    meta.update({key: record[key] for key in ("policy_model", "data_source") if record.get(key) is not None})
    return Trajectory(id=trajectory_id, question=question, steps=steps, answer=None if answer is None else str(answer),
                      images=resolve_images(images, where, options.image_base), meta=meta)


FORMAT = RecordFormat(
    name="visualprocessbench", detect=detect, read=read,
    description="VisualProcessBench-style multimodal records; those whose steps are all labelled correct.",
)
