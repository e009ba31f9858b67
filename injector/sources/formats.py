"""Record formats: how one raw record of each supported shape becomes a `Trajectory` (or a reason to skip it).

Readers take (record, origin, where): `origin` is `<stem>:<line>` for default ids, `where` the file the record came
from (relative image paths resolve against its directory; every local image must lie under the image base). A
malformed record raises `BadRecord`; a valid record that is not a fully correct solution returns the reason it is
skipped.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from injector.answer.final import answers_equivalent, extract_final_answer
from injector.model.choices import RECORD_FORMATS  # noqa: F401 (defined there for --help)
from injector.util.errors import InjectorError, UserError
from injector.util.images import ImageRefused, check_reference
from injector.model.trajectory import Trajectory

_TRAJECTORY_FIELDS = tuple(Trajectory.model_fields)
_FORMAT_HINT = "use --input-format to choose another format"
_PRM800K_NEEDS = ("PRM800K records need question.problem, question.ground_truth_answer, label.steps and "
                  "label.finish_reason")
_PRMBENCH_NEEDS = "PRMBench records need original_question and original_process"
_MISSING = object()


class BadRecord(InjectorError):
    """A malformed record; the stream turns it into `InputError(path, line, message)`."""


def detect_format(record: dict) -> str | None:
    """The record format a raw record looks like, or None."""
    if not isinstance(record, dict):
        return None
    label, question = record.get("label"), record.get("question")
    if isinstance(label, dict) and "steps" in label and isinstance(question, dict) and "problem" in question:
        return "prm800k"
    if "original_process" in record:
        return "prmbench"
    if isinstance(record.get("response"), dict) and "process_correctness" in record["response"]:
        return "visualprocessbench"
    if "process_evaluation" in record and "question" in record:
        return "projudgebench"
    if "steps" in record and "question" in record:
        return "trajectories"
    return None


def _lookup(record: Any, dotted: str) -> Any:
    """`record["a"]["b"]` for "a.b" (a number indexes a list), or `_MISSING`."""
    value = record
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _required(record: dict, dotted: str, kinds: tuple[type, ...], needs: str) -> Any:
    value = _lookup(record, dotted)
    if value is _MISSING:
        raise BadRecord(f"missing field '{dotted}' ({needs}); {_FORMAT_HINT}")
    if not isinstance(value, kinds):
        wanted = " or ".join("null" if kind is type(None) else kind.__name__ for kind in kinds)
        raise BadRecord(f"field '{dotted}' must be {wanted}, not {type(value).__name__}")
    return value


def _read_prm800k(record: dict, origin: str, strict: bool) -> Trajectory | str:
    """A fully correct PRM800K solution as a Trajectory, else the reason it is skipped."""
    problem = _required(record, "question.problem", (str,), _PRM800K_NEEDS)
    truth = _required(record, "question.ground_truth_answer", (str, type(None)), _PRM800K_NEEDS)
    steps = _required(record, "label.steps", (list,), _PRM800K_NEEDS)
    finish = _required(record, "label.finish_reason", (str, type(None)), _PRM800K_NEEDS)
    if record.get("is_quality_control_question"):
        return "quality_control"
    if record.get("is_initial_screening_question"):
        return "screening"
    if finish != "solution":
        return "not_solved"
    if not steps:
        raise BadRecord("label.steps is empty although label.finish_reason is 'solution'")
    texts, ratings = [], []  # ratings of chosen completions only: a human completion counts as correct
    for index, step in enumerate(steps):
        text, rating, chosen = _prm800k_step(step, index)
        texts.append(text)
        if chosen:
            ratings.append(rating)
    present = [text for text in texts if text is not None]
    if len(present) != len(texts):
        return "missing_step"
    if -1 in ratings:
        return "rated_wrong"
    if strict and any(rating != 1 for rating in ratings):
        return "not_rated_correct"
    if not answers_equivalent(extract_final_answer(present[-1]), truth):
        return "answer_mismatch"
    trajectory_id = f"prm800k:{origin}"
    return Trajectory(id=trajectory_id, question=problem, steps=present, answer=truth,
                      meta={"idx": trajectory_id, "source_format": "prm800k"})


def _prm800k_step(step: Any, index: int) -> tuple[str | None, Any, bool]:
    """(text, rating, whether a chosen completion gave it) of one label step; text None when it has neither."""
    where = f"label.steps[{index}]"
    if not isinstance(step, dict):
        raise BadRecord(f"{where} must be an object, not {type(step).__name__}")
    completions, chosen = step.get("completions") or [], step.get("chosen_completion")
    human = step.get("human_completion")
    if not isinstance(completions, list):
        raise BadRecord(f"{where}.completions must be a list")
    if chosen is not None:
        if not isinstance(chosen, int) or isinstance(chosen, bool) or not 0 <= chosen < len(completions):
            raise BadRecord(f"{where}.chosen_completion is {chosen!r}, not an index into its "
                             f"{len(completions)} completions")
        completion = completions[chosen]
        if not isinstance(completion, dict) or not isinstance(completion.get("text"), str):
            raise BadRecord(f"{where}.completions[{chosen}] needs a text string")
        return completion["text"], completion.get("rating"), True
    if human is not None:
        if not isinstance(human, dict) or not isinstance(human.get("text"), str):
            raise BadRecord(f"{where}.human_completion needs a text string")
        return human["text"], None, False
    return None, None, False


def _read_prmbench(record: dict, origin: str) -> Trajectory:
    """The original (correct) solution of a PRMBench record, its text kept verbatim."""
    question = _required(record, "original_question", (str,), _PRMBENCH_NEEDS)
    steps = _required(record, "original_process", (list,), _PRMBENCH_NEEDS)
    if not steps:
        raise BadRecord("original_process is empty; a trajectory needs at least one step")
    for number, step in enumerate(steps, 1):
        if not isinstance(step, str):
            raise BadRecord(f"original_process step {number} must be a string, not {type(step).__name__}")
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


def check_fields(fields: dict[str, str]) -> None:
    for target, source in fields.items():
        if target not in _TRAJECTORY_FIELDS:
            raise UserError(f"--field {target}={source}: unknown target {target!r}; targets are "
                            f"{', '.join(_TRAJECTORY_FIELDS)}")
        if not source:
            raise UserError(f"--field {target}=: name the source field, e.g. --field {target}=response.{target}")


def _read_trajectory(record: dict, origin: str, fields: dict[str, str] | None, where: str = "",
                     image_base: Path | None = None) -> Trajectory:
    """One of our own records, or a foreign one mapped through `fields` (its other keys are ignored)."""
    if fields:
        data = {key: value for key, value in record.items() if key in _TRAJECTORY_FIELDS and key not in fields}
        for target, source in fields.items():
            value = _lookup(record, source)
            if value is _MISSING:
                raise BadRecord(f"missing field '{source}' (mapped to {target} by --field {target}={source})")
            data[target] = value
    else:
        data = dict(record)
    for key in ("id", "answer", "images", "meta", "subject"):  # Hugging Face rows fill absent columns with None
        if data.get(key, _MISSING) is None:
            del data[key]
    data.setdefault("id", origin)
    for key in ("id", "answer"):  # numeric ids and answers are common in foreign data
        if isinstance(data.get(key), (int, float)) and not isinstance(data.get(key), bool):
            data[key] = str(data[key])
    try:
        trajectory = Trajectory.model_validate(data)
    except ValidationError as exc:
        raise BadRecord(_explain(exc, fields or {})) from None
    trajectory.meta.setdefault("idx", trajectory.id)
    trajectory.images = resolve_images(trajectory.images, where, image_base)
    return trajectory


def _explain(error: ValidationError, fields: dict[str, str]) -> str:
    """A pydantic error as what is wrong and how to fix it."""
    problems = []
    for item in error.errors():
        name = ".".join(str(part) for part in item["loc"])
        top = str(item["loc"][0]) if item["loc"] else ""
        mapped = f" (from '{fields[top]}')" if top in fields else ""
        if item["type"] == "extra_forbidden":
            problems.append(f"unknown field '{name}'; a trajectory has {', '.join(_TRAJECTORY_FIELDS)} (map other "
                            "names with --field TARGET=SOURCE, or use --input-format to choose another format)")
        elif item["type"] == "missing":
            problems.append(f"missing field '{name}' (trajectory records need question and steps; map other "
                            f"names with --field TARGET=SOURCE, or {_FORMAT_HINT})")
        else:
            problems.append(f"field '{name}'{mapped}: {item['msg'].removeprefix('Value error, ')}")
    return "; ".join(problems)


def resolve_images(images: list[Any], where: str, base: Path | None) -> list[str]:
    """Image references as a trajectory keeps them: URLs as given, a local path as its real, absolute path once it
    is known to be a raster image under the image directory `base` (see `images.py`); a relative path resolves
    against the input file's directory."""
    relative_to = Path(where).parent if where and Path(where).is_file() else None
    resolved = []
    for image in images:
        if not isinstance(image, str) or not image:
            raise BadRecord(f"an image reference must be a path or URL string, not {image!r}")
        try:
            resolved.append(check_reference(image, relative_to=relative_to, base=base))
        except ImageRefused as refused:
            raise BadRecord(str(refused)) from None
    return resolved


def _read_visualprocessbench(record: dict, origin: str, where: str, image_base: Path | None) -> Trajectory | str:
    """A VisualProcessBench-style record (`image`, `question`, `answer`, `response.steps`,
    `response.process_correctness`): kept only when every step is labelled correct (1)."""
    needs = "VisualProcessBench records need question, response.steps and response.process_correctness"
    question = _required(record, "question", (str,), needs)
    steps = _required(record, "response.steps", (list,), needs)
    labels = _required(record, "response.process_correctness", (list,), needs)
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
                      images=resolve_images(images, where, image_base), meta=meta)


def _read_projudgebench(record: dict, origin: str, where: str, image_base: Path | None) -> Trajectory | str:
    """A ProJudgeBench-style record (`question`, `image_paths`, `subject`, `process_evaluation` =
    [step, "1"|"0", error type, explanation] per step): kept only when every step is labelled "1"."""
    needs = "ProJudgeBench records need question and process_evaluation"
    question = _required(record, "question", (str,), needs)
    evaluation = _required(record, "process_evaluation", (list,), needs)
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
                      images=resolve_images(record.get("image_paths") or [], where, image_base),
                      meta={"idx": trajectory_id, "source_format": "projudgebench"})


def reader_for(format: str, *, strict: bool = False, fields: dict[str, str] | None = None,
               image_base: Path | None = None) -> Callable[[Any, str, str], Trajectory | str]:
    """The reader of one record format; local image paths must lie under `image_base` (None: no local images)."""
    readers: dict[str, Callable[[Any, str, str], Trajectory | str]] = {
        "prm800k": lambda record, origin, where: _read_prm800k(record, origin, strict),
        "prmbench": lambda record, origin, where: _read_prmbench(record, origin),
        "trajectories": lambda record, origin, where: _read_trajectory(record, origin, fields, where, image_base),
        "visualprocessbench": lambda record, origin, where: _read_visualprocessbench(record, origin, where,
                                                                                     image_base),
        "projudgebench": lambda record, origin, where: _read_projudgebench(record, origin, where, image_base),
    }
    return readers[format]
