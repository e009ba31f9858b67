"""What an engine answers: one JSON object, parsed tolerantly and checked for shape (`parse_answer`).

The parts live beside this module: `parsing` reads the JSON object (LaTeX backslashes repaired, a fence stripped),
`forms` holds the answer's models, `schemas` their strict JSON schemas; their public names are re-exported here.

Top level: an answer that decodes to something other than an object (a list, a string) is a `parse_error`.
"""
from __future__ import annotations

import json

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from injector.answer.forms import (Edit, EditAnswer, EditOp, FullAnswer, MultiSolutionAnswer, StepNumber,  # noqa: F401
                                   answer_form)
from injector.answer.parsing import (LATEX_COMMANDS, AnswerError, escape_latex_backslashes,  # noqa: F401
                                     json_type, parse_json_object)
from injector.answer.schemas import edit_answer_schema, response_schema  # noqa: F401
from injector.model.choices import DEFAULT_OUTPUT_MODE, OUTPUT_MODES, OutputMode  # noqa: F401 (defined there for --help)
from injector.model.codes import ReasonCode
from injector.util.errors import UserError
from injector.taxonomy import Category

__all__ = ["DEFAULT_OUTPUT_MODE", "LATEX_COMMANDS", "OUTPUT_MODES", "AnswerError", "Edit", "EditAnswer", "EditOp",
           "FullAnswer", "MultiSolutionAnswer", "OutputMode", "StepNumber", "answer_mode", "check_output_mode",
           "edit_answer_schema", "escape_latex_backslashes", "parse_answer", "parse_json_object", "response_schema"]


def check_output_mode(output_mode: str) -> str:
    """`output_mode`, if it is one of `OUTPUT_MODES`; a UserError otherwise."""
    if output_mode not in OUTPUT_MODES:
        raise UserError(f"unknown output mode {output_mode!r}: choose one of {', '.join(OUTPUT_MODES)}")
    return output_mode


def answer_mode(category: Category, output_mode: str) -> str:
    """The form the answer takes for `category` asked in `output_mode`."""
    return answer_form(category.rules.multi_solution, check_output_mode(output_mode))


_EXPECTED = {
    "modified_question": "a string",
    "modified_process": "a list of strings, one per step",
    "modified_steps": "a list of integers (1-based step numbers)",
    "error_steps": "a list of integers (1-based step numbers)",
    "reason": "a string",
    "edits": "a list of edit objects {op, step or after, text, error}",
    "question": "a string or null",
}


def _describe(error: ErrorDetails) -> str:
    location = error["loc"]
    field = str(location[0])
    expected = _EXPECTED.get(field, "a value of another type")
    if field == "edits" and len(location) > 1 and isinstance(location[1], int):
        where = f"edits: item {location[1] + 1}"
        if error["type"] == "value_error":
            return f"{where}: {error['msg'].removeprefix('Value error, ')}"
        if len(location) > 2:
            return f"{where}: {location[2]}: {error['msg']}"
    if error["type"] == "missing":
        return f"{field}: missing; expected {expected}"
    if len(location) > 1 and isinstance(location[1], int):
        shown = json.dumps(error["input"], ensure_ascii=False)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        return f"{field}: expected {expected}, but item {location[1] + 1} is {shown}"
    return f"{field}: expected {expected}, got {json_type(error['input'])}"


def _schema_message(error: ValidationError) -> str:
    lines = list(dict.fromkeys(_describe(item) for item in error.errors()))
    return "; ".join(lines)


def _answer_model(multi_solution: bool,
                  edits: bool) -> type[FullAnswer] | type[MultiSolutionAnswer] | type[EditAnswer]:
    if multi_solution:
        return MultiSolutionAnswer
    return EditAnswer if answer_form(multi_solution, "edits" if edits else "full") == "edits" else FullAnswer


def parse_answer(text: str, *, multi_solution: bool = False,
                 edits: bool = False) -> FullAnswer | MultiSolutionAnswer | EditAnswer:
    """Parse a model reply and check its shape; raises `AnswerError` (`PARSE_ERROR` or `SCHEMA`)."""
    data = parse_json_object(text)
    model = _answer_model(multi_solution, edits)
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise AnswerError(ReasonCode.SCHEMA, _schema_message(error)) from None
