"""The JSON schema of an answer, valid as an OpenAI strict `json_schema` response format."""
from __future__ import annotations

import copy
import functools
import json
from typing import Any

from injector.answer.forms import FullAnswer, MultiSolutionAnswer, answer_form


def response_schema(*, multi_solution: bool = False, edits: bool = False, explanations: bool = False) -> dict:
    """The JSON schema of an answer, valid as an OpenAI strict `json_schema` response format (a fresh copy).

    In edit mode the error edits carry an `explanation` key only when `explanations` is asked for: strict mode
    makes every key required, and a null explanation on every edit costs output tokens for nothing.
    """
    return json.loads(_schema_text(multi_solution, edits, explanations))  # a copy: providers may rewrite it


def _strict_clean(node: Any) -> Any:
    """Drop what OpenAI strict mode rejects or does not need (defaults, titles); property names are kept."""
    if isinstance(node, list):
        return [_strict_clean(value) for value in node]
    if not isinstance(node, dict):
        return node
    cleaned = {key: _strict_clean(value) for key, value in node.items() if key not in ("default", "title")}
    if isinstance(node.get("properties"), dict):
        cleaned["properties"] = {name: _strict_clean(value) for name, value in node["properties"].items()}
    return cleaned


@functools.lru_cache(maxsize=8)
def _schema_text(multi_solution: bool, edits: bool, explanations: bool) -> str:
    return json.dumps(_build_schema(multi_solution, edits, explanations))


def _build_schema(multi_solution: bool, edits: bool, explanations: bool) -> dict:
    if answer_form(multi_solution, "edits" if edits else "full") == "edits":
        return copy.deepcopy(edit_answer_schema(explanations))
    schema = copy.deepcopy(_response_schema(multi_solution))
    if explanations and not multi_solution:
        schema["properties"]["explanations"] = {
            "type": "array",
            "description": "One entry per error step: its 1-based number in modified_process and what is wrong.",
            "items": {"type": "object", "properties": {"step": {"type": "integer"}, "text": {"type": "string"}},
                      "required": ["step", "text"], "additionalProperties": False},
        }
        schema["required"].append("explanations")
    return schema


def _edit_variant(op: str, index: str, *extra: str) -> dict[str, Any]:
    described = {
        "step": {"type": "integer", "description": "1-based original step."},
        "after": {"type": "integer", "description": "Insert after this original step (0: before the first)."},
        "text": {"type": "string", "description": "The new step text."},
        "error": {"type": "boolean", "description": "Whether this step is an error step."},
        "explanation": {"type": ["string", "null"], "description": "Why this step is an error, or null."},
    }
    keys = [index, *extra]
    return {
        "type": "object",
        "properties": {"op": {"type": "string", "enum": [op]}, **{key: described[key] for key in keys}},
        "required": ["op", *keys],
        "additionalProperties": False,
    }


@functools.lru_cache(maxsize=2)
def edit_answer_schema(explanations: bool = False) -> dict[str, Any]:
    """Written out rather than generated: strict mode needs every key of an object required, so each op is its own
    variant carrying only its own keys (six keys with nulls on every edit cost a quarter more output tokens;
    bench/edit_tokens.py)."""
    why = ("explanation",) if explanations else ()
    return {
        "type": "object",
        "properties": {
            "question": {"type": ["string", "null"], "description": "The full new question, or null when unchanged."},
            "edits": {
                "type": "array",
                "items": {"anyOf": [
                    _edit_variant("replace", "step", "text", "error", *why),
                    _edit_variant("insert", "after", "text", "error", *why),
                    _edit_variant("delete", "step"),
                    _edit_variant("flag", "step", *why),
                ]},
            },
            "reason": {"type": "string", "description": "Why the modification is an error of this category."},
        },
        "required": ["question", "edits", "reason"],
        "additionalProperties": False,
    }


@functools.lru_cache(maxsize=2)
def _response_schema(multi_solution: bool) -> dict:
    # Built once: pydantic's schema generation costs about a millisecond, as much as the rest of a unit.
    model = MultiSolutionAnswer if multi_solution else FullAnswer
    schema = _strict_clean(model.model_json_schema(mode="validation"))
    # A map from step to text cannot be expressed in strict mode: `response_schema` adds a list form on request.
    schema["properties"].pop("explanations", None)
    schema["required"] = list(schema["properties"])
    schema["additionalProperties"] = False
    return schema
