"""The blind judge of `inject verify`: which critique a category gets, its prompt, its answer contract, and the
verdict a critique of the modified solution and one of the original give together.

Pure functions; `verify.py` sends the requests. The judge sees the question and the numbered steps, never the
labels (category, declared error steps, reason, whether the solution was modified).
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from injector.answer.contract import AnswerError, parse_json_object
from injector.util.errors import InjectorError, UserError
from injector.inject.prompts import render_bundled
from injector.answer.step_labels import detect_labels, strip_label
from injector.taxonomy import Category
from injector.triage.verdicts import CritiqueKind, JudgeAnswer

CRITIQUE_KINDS: tuple[str, ...] = ("error", "redundancy", "circular", "alternative")
CRITIQUE_TEMPLATES: dict[str, str] = {
    "error": "verify/error.j2",
    "redundancy": "verify/redundancy.j2",
    "circular": "verify/circular.j2",
    # The alternative solution of multi_solution gets the plain correctness critique, word for word: the judge
    # must not learn that it reads an alternative.
    "alternative": "verify/error.j2",
}
ROLLOUT_TEMPLATE = "verify/rollout.j2"
SIMPLICITY_DOMAIN = "simplicity"
"""PRMBench's domain of redundancy and circular logic: a correct step there is still an error of the category."""
CIRCULAR_CLASSIFICATIONS = frozenset({"circular"})
"""PRMBench's `classification` of Non-Circular Logic, the one simplicity category that is not plain redundancy."""

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "first_error_step": {"type": "integer",
                             "description": "1-based number of the step asked for, or -1 when there is none."},
        "reason": {"type": "string", "description": "Why that step (or why none)."},
    },
    "required": ["first_error_step", "reason"],
    "additionalProperties": False,
}
"""The judge's answer contract, sent as a strict `json_schema` response format where the provider takes one."""


def critique_kind(category: Category | None, *, domain: str = "", classification: str = "",
                  multi_solution: bool = False) -> CritiqueKind:
    """What the judge is asked for a category, from the taxonomy's metadata.

    A category may name its critique itself (`variables: {critique: error|redundancy|circular|alternative}` in the
    taxonomy YAML); otherwise a multi-solution category gets `alternative`, PRMBench's simplicity domain gets
    `circular` for circular logic and `redundancy` for the rest, and every other domain (soundness, sensitivity,
    a custom taxonomy's) gets `error`. Without the category (not in the taxonomy), the manifest's domain and
    classification decide.
    """
    if category is not None:
        declared = category.variables.get("critique")
        if declared is not None:
            if declared not in CRITIQUE_KINDS:
                raise UserError(f"category {category.id!r}: variables.critique is {declared!r}; use one of "
                                f"{', '.join(CRITIQUE_KINDS)}")
            return declared
        domain, classification = category.domain, category.classification
        multi_solution = category.rules.multi_solution
    if multi_solution:
        return "alternative"
    if domain == SIMPLICITY_DOMAIN:
        return "circular" if classification in CIRCULAR_CLASSIFICATIONS else "redundancy"
    return "error"


def bare_steps(steps: list[str]) -> list[str]:
    """The steps without "Step k:" labels when every step has one (the prompt numbers them itself)."""
    return [strip_label(step) for step in steps] if detect_labels(steps) is not None else list(steps)


_TAG_OPENING = re.compile(r"<(?=[/!?A-Za-z]|\s*/?\s*(?:step|question))", re.IGNORECASE)
"""A `<` that could begin a tag (`<step_4>`, `</step_3>`, `< /question >`, `<!--`)."""
TAG_ESCAPE = "&lt;"


def as_data(text: str) -> str:
    """Candidate text as the judge is shown it: every `<` that could begin a tag is written `&lt;`, so no question,
    step or image name can close the tag around it and open a forged one (the prompt says so, and that the text is
    data). Nothing else changes: `a < b` and `x<1` stay as they are; `a<b` is shown `a&lt;b`."""
    return _TAG_OPENING.sub(TAG_ESCAPE, text)


def critique_messages(kind: str, question: str, steps: list[str], images: list[str]) -> list[dict[str, Any]]:
    """The judge's messages for one critique of `steps` (the question and the numbered steps, nothing else), the
    candidate's text fenced as data (`as_data`)."""
    return render_bundled(CRITIQUE_TEMPLATES[kind], question=as_data(question),
                          steps=[as_data(step) for step in bare_steps(steps)], images=[as_data(i) for i in images])


def rollout_messages(question: str, prefix: list[str], images: list[str]) -> list[dict[str, Any]]:
    """The messages asking to continue a solution from `prefix` (possibly empty) to its final answer, the text
    fenced as data (`as_data`)."""
    return render_bundled(ROLLOUT_TEMPLATE, question=as_data(question),
                          steps=[as_data(step) for step in bare_steps(prefix)], images=[as_data(i) for i in images])


class UnreadableJudgement(InjectorError, ValueError):
    """The judge's answer has no usable `first_error_step`; the message is worded to be sent back (it never reaches
    the CLI: after one re-ask the critique is recorded as unparseable)."""


_INTEGER = re.compile(r"[+-]?\d+")


def _step_number(value: Any) -> int:
    """An integer step number: an int, an integral float (3.0) or an integer string ("3"); never a boolean."""
    if isinstance(value, bool):
        raise UnreadableJudgement(f"first_error_step is {json.dumps(value)}, not a step number")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER.fullmatch(value.strip()):
        return int(value.strip())
    shown = json.dumps(value, ensure_ascii=False)
    raise UnreadableJudgement(f"first_error_step is {shown[:40]}, not an integer")


def parse_judgement(text: str, steps: int) -> JudgeAnswer:
    """The judge's answer, read tolerantly (fences, prose, unescaped LaTeX), its index checked strictly: an integer,
    -1 or 1..`steps`. Raises `UnreadableJudgement`."""
    try:
        data = parse_json_object(text)
    except AnswerError as exc:
        raise UnreadableJudgement(exc.message.split(" Answer with")[0]) from None
    if "first_error_step" not in data:
        raise UnreadableJudgement("first_error_step is missing")
    step = _step_number(data["first_error_step"])
    if step != -1 and not 1 <= step <= steps:
        raise UnreadableJudgement(f"first_error_step is {step}, but the steps are numbered 1 to {steps} "
                                  "(-1 when there is none)")
    reason = data.get("reason", "")
    return JudgeAnswer(first_error_step=step, reason=reason if isinstance(reason, str) else json.dumps(reason))


def reask_message(problem: str, steps: int) -> str:
    """The follow-up turn after an unreadable answer."""
    return (f"Your answer could not be used: {problem}. Answer again with exactly one JSON object "
            f'{{"first_error_step": <a step number from 1 to {steps}, or -1>, "reason": <string>}} and nothing else.')


def verdict_of(kind: str, declared_first: int | None, modified: JudgeAnswer, original: JudgeAnswer | None) -> str:
    """The verdict of one critique of the modified solution (with the original's, same kind and sample).

    In order of precedence: `original_flagged` (the judge finds a problem of that kind in the original: the source
    may be flawed), `unparseable`, `missed` (-1 on the modified solution), `early` / `late` (before / after the
    first declared error step), `confirmed`. An alternative (multi_solution, no declared error): `confirmed` when
    the judge finds no wrong step, else `flagged`.
    """
    if original is not None and original.first_error_step not in (None, -1):
        return "original_flagged"
    if modified.first_error_step is None or (original is not None and original.first_error_step is None):
        return "unparseable"
    if kind == "alternative" or declared_first is None:
        return "confirmed" if modified.first_error_step == -1 else "flagged"
    if modified.first_error_step == -1:
        return "missed"
    if modified.first_error_step < declared_first:
        return "early"
    if modified.first_error_step > declared_first:
        return "late"
    return "confirmed"


def majority(verdicts: list[str]) -> str:
    """The verdict most votes give; `disputed` when two or more verdicts share the most votes."""
    ranked = Counter(verdicts).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return "disputed"
    return ranked[0][0]
