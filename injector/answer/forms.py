"""The answer's forms as pydantic models: a full solution, a different correct solution, edits to the original."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, field_validator, model_validator


def answer_form(multi_solution: bool, output_mode: str) -> str:
    """The form of the answer (`full` or `edits`) for a category's `multi_solution` rule asked in `output_mode`."""
    # The one place of this rule: multi_solution always writes a whole new solution, whatever the output mode.
    return "full" if multi_solution else output_mode


def _reject_bool(value: Any) -> Any:
    # pydantic's lax mode reads true as 1; a boolean is no step number, so let it fail as one.
    if isinstance(value, bool):
        raise ValueError("a boolean is not a step number")
    return value


StepNumber = Annotated[int, BeforeValidator(_reject_bool)]
"""A 1-based step index; lax mode still accepts "3" and 3.0, which mean 3 unambiguously."""

_CONFIG = ConfigDict(extra="ignore", use_attribute_docstrings=True)


class FullAnswer(BaseModel):
    """The full form: the modified question and solution, which steps changed and which are wrong, and why."""

    model_config = _CONFIG

    modified_question: str
    """The question after the modification (the original, unchanged, unless the category changes it)."""
    modified_process: list[str]
    """Every step of the modified solution, in order, one string per step."""
    modified_steps: list[StepNumber]
    """1-based numbers of the steps of modified_process that were changed or inserted."""
    error_steps: list[StepNumber]
    """1-based numbers of the steps of modified_process that are erroneous."""
    reason: str
    """Why the modification is an error of this category."""
    explanations: dict[str, str] | None = None
    """Error step (its 1-based number in modified_process, as a string) -> what is wrong with it."""

    @field_validator("explanations", mode="before")
    @classmethod
    def _explanations_as_map(cls, value: Any) -> Any:
        # The strict schema cannot express a map, so it asks for [{"step": n, "text": ...}]; both forms are fine.
        if isinstance(value, list):
            return {str(item.get("step")): item.get("text") for item in value if isinstance(item, dict)}
        return value


class MultiSolutionAnswer(BaseModel):
    """The multi-solution form: a different complete correct solution."""

    model_config = _CONFIG

    modified_process: list[str]
    """Every step of the new solution, in order, one string per step."""
    reason: str = ""
    """How this solution differs from the original."""


EditOp = Literal["replace", "insert", "delete", "flag"]
"""What an edit does to the original steps."""


class Edit(BaseModel):
    """One edit of the original solution; `step` and `after` index the ORIGINAL steps (1-based, `after` from 0)."""

    model_config = _CONFIG

    op: EditOp
    step: StepNumber | None = None
    """The original step a replace, delete or flag acts on."""
    after: StepNumber | None = None
    """The original step an insert goes after (0: before the first step)."""
    text: str | None = None
    """The new step text of a replace or insert."""
    error: bool | None = False
    """Whether the replaced or inserted step is an error step (null means false)."""
    explanation: str | None = None
    """Why this step is an error (error edits and flags)."""

    @model_validator(mode="after")
    def _fields_of_op(self) -> "Edit":
        needs = {"replace": ("step", "text"), "insert": ("after", "text"), "delete": ("step",), "flag": ("step",)}
        missing = [name for name in needs[self.op] if getattr(self, name) is None]
        if missing:
            raise ValueError(f"a {self.op} edit needs {' and '.join(missing)}")
        return self

    @property
    def is_error(self) -> bool:
        return self.op == "flag" or bool(self.error)


class EditAnswer(BaseModel):
    """The edit form: only what changes; the toolkit applies it to the original steps."""

    model_config = _CONFIG

    question: str | None = None
    """The full new question, or null when it is unchanged."""
    edits: list[Edit]
    reason: str
    """Why the modification is an error of this category."""
