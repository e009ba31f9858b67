"""PRM800K (`question.problem`, `question.ground_truth_answer`, `label.steps[].completions`, `label.finish_reason`):
the fully correct, human-rated solutions, each step the chosen completion (or the human one)."""
from __future__ import annotations

from typing import Any

from injector.answer.final import answers_equivalent, extract_final_answer
from injector.model.trajectory import Trajectory
from injector.sources.reading import BadRecord, required
from injector.sources.registry import ReadOptions, RecordFormat

_NEEDS = "PRM800K records need question.problem, question.ground_truth_answer, label.steps and label.finish_reason"


def detect(record: dict) -> bool:
    label, question = record.get("label"), record.get("question")
    return isinstance(label, dict) and "steps" in label and isinstance(question, dict) and "problem" in question


def read(record: dict, origin: str, where: str, options: ReadOptions) -> Trajectory | str:
    """A fully correct PRM800K solution as a Trajectory, else the reason it is skipped."""
    problem = required(record, "question.problem", (str,), _NEEDS)
    truth = required(record, "question.ground_truth_answer", (str, type(None)), _NEEDS)
    steps = required(record, "label.steps", (list,), _NEEDS)
    finish = required(record, "label.finish_reason", (str, type(None)), _NEEDS)
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
        text, rating, chosen = _step(step, index)
        texts.append(text)
        if chosen:
            ratings.append(rating)
    present = [text for text in texts if text is not None]
    if len(present) != len(texts):
        return "missing_step"
    if -1 in ratings:
        return "rated_wrong"
    if options.strict and any(rating != 1 for rating in ratings):
        return "not_rated_correct"
    if not answers_equivalent(extract_final_answer(present[-1]), truth):
        return "answer_mismatch"
    trajectory_id = f"prm800k:{origin}"
    return Trajectory(id=trajectory_id, question=problem, steps=present, answer=truth,
                      meta={"idx": trajectory_id, "source_format": "prm800k"})


def _step(step: Any, index: int) -> tuple[str | None, Any, bool]:
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


FORMAT = RecordFormat(
    name="prm800k", detect=detect, read=read, options=("strict",),
    description="PRM800K's human-labelled solutions; the fully correct ones are read.",
)
