"""Worked examples as data: the two answer forms a prompt shows, and the checks every example must pass.

An example is written once, in full form (`WorkedExample` in `taxonomy`). The edit form is derived with the
same conversion the toolkit uses elsewhere (`edits.edit_answer_from_full`), so the two can never disagree. Both
forms go through the real parser and validator (`example_problems`), which the tests and
`inject taxonomy validate` call.
"""
from __future__ import annotations

import json
from typing import Any

from injector.answer.align import align_steps, normalize_question, normalize_step
from injector.answer.final import final_answer_of_steps
from injector.answer.contract import AnswerError, parse_answer
from injector.answer.edits import edit_answer_from_full
from injector.taxonomy import Category, Taxonomy, WorkedExample
from injector.model.trajectory import Trajectory


def example_trajectory(example: WorkedExample) -> Trajectory:
    """The example's original solution as a trajectory (its known answer read from the last step)."""
    return Trajectory(id="example", question=example.question, steps=list(example.steps),
                      answer=final_answer_of_steps(list(example.steps)), subject=example.subject or None,
                      images=["figure"] if example.figure else [])


def full_form(category: Category, example: WorkedExample) -> dict[str, Any]:
    """The answer as the full contract asks for it (`modified_steps` derived by the validator's alignment)."""
    answer = example.answer
    if category.rules.multi_solution:
        return {"modified_process": list(answer.modified_process), "reason": answer.reason}
    full: dict[str, Any] = {
        "modified_question": answer.modified_question if answer.modified_question is not None else example.question,
        "modified_process": list(answer.modified_process),
        "modified_steps": [j + 1 for j in align_steps(list(example.steps), list(answer.modified_process)).changed],
        "error_steps": list(answer.error_steps),
        "reason": answer.reason,
    }
    if category.rules.require_explanations or answer.explanations:
        full["explanations"] = {str(step): text for step, text in sorted(answer.explanations.items())}
    return full


def edit_form(category: Category, example: WorkedExample) -> dict[str, Any]:
    """The answer as the edit contract asks for it, derived from the full form."""
    answer = example.answer
    return edit_answer_from_full(example.question, list(example.steps), modified_question=answer.modified_question,
                                 modified_process=list(answer.modified_process), error_steps=list(answer.error_steps),
                                 reason=answer.reason, explanations=dict(answer.explanations))


def format_answer(answer: dict[str, Any]) -> str:
    """Compact, readable JSON: one key per line, one step or edit per line."""
    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    lines = []
    for key, value in answer.items():
        if isinstance(value, list) and value and all(isinstance(item, (str, dict)) for item in value):
            text = "[\n" + ",\n".join(f"    {dumps(item)}" for item in value) + "\n  ]"
        else:
            text = dumps(value)
        lines.append(f"  {dumps(key)}: {text}")
    return "{\n" + ",\n".join(lines) + "\n}"


def uses_edits(category: Category, output_mode: str) -> bool:
    return output_mode == "edits" and not category.rules.multi_solution


def same_problem(a: str, b: str) -> bool:
    """Whether two question texts are one problem: equal once whitespace and letter case are normalised."""
    return normalize_question(a).casefold() == normalize_question(b).casefold()


def examples_for(category: Category, question: str | None) -> list[WorkedExample]:
    """The examples a unit on `question` is shown: every example but those of the unit's own problem (a model that
    sees its own problem solved and injected would copy the answer instead of making its own error)."""
    if question is None:
        return list(category.examples)
    return [example for example in category.examples if not same_problem(example.question, question)]


def rendered_examples(category: Category, output_mode: str, question: str | None = None) -> list[dict[str, Any]]:
    """What the prompt template shows for each example (all but those of `question`'s own problem): the input as a
    trajectory is shown, and the answer text."""
    shown = []
    for example in examples_for(category, question):
        answer = edit_form(category, example) if uses_edits(category, output_mode) else full_form(category, example)
        shown.append({"question": example.question, "steps": list(example.steps), "subject": example.subject,
                      "figure": example.figure,
                      "known": final_answer_of_steps(list(example.steps)), "answer": format_answer(answer)})
    return shown


def example_problems(taxonomy: Taxonomy, category: Category, example: WorkedExample) -> list[str]:
    """Everything wrong with one example: each answer form, parsed and validated for real, and propagation."""
    from injector.inject.validation import validate_answer  # validate imports this package's taxonomy module

    trajectory = example_trajectory(example)
    problems: list[str] = []
    verdicts = {}
    for mode in ("full", "edits"):
        form = "edit form" if uses_edits(category, mode) else "full form"
        if form in verdicts:
            continue
        text = format_answer(edit_form(category, example) if form == "edit form" else full_form(category, example))
        try:
            answer = parse_answer(text, multi_solution=category.rules.multi_solution, edits=form == "edit form")
        except AnswerError as exc:
            problems.append(f"{form}: {exc.code}: {exc.message}")
            continue
        verdict = validate_answer(taxonomy, category, trajectory, answer)
        verdicts[form] = verdict
        if verdict.codes:
            problems.append(f"{form}: {', '.join(verdict.codes)}: {'; '.join(verdict.messages)}")
    if len(verdicts) == 2:
        full, edits = verdicts["full form"], verdicts["edit form"]
        if (full.modified_process, full.error_steps) != (edits.modified_process, edits.error_steps):
            problems.append("the edit form does not give the same solution and error steps as the full form")
    problems.extend(_propagation_problems(category, example))
    return problems


def _propagation_problems(category: Category, example: WorkedExample) -> list[str]:
    """Keep-answer categories leave the last step (the `# Answer` step) as it is; the others carry the error
    through it, unless the example says why not."""
    rules = category.rules
    if rules.multi_solution:
        return []
    last_changed = normalize_step(example.answer.modified_process[-1]) != normalize_step(example.steps[-1])
    if rules.final_answer == "keep":
        # The validator's final-answer rule checks a `# Answer`; without one, the last step must stay.
        if last_changed and final_answer_of_steps(list(example.steps)) is None:
            return ["the last step changed: this category keeps the final step and its answer as they are"]
        return []
    if rules.final_answer != "keep" and not last_changed and not example.answer_kept_because:
        return ["the last step does not change: propagate the error through the final step and its answer, or "
                "say why it stays in `answer_kept_because`"]
    return []
