"""`SplitRow`: one row of a split `inject build` writes (its DatasetDict, Parquet and `jsonl/` files) and
`inject eval` reads back: PRMBench's fields first, in its order, then the toolkit's."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr


class StepExplanation(BaseModel):
    """Why one error step is wrong, as the engine explained it."""

    model_config = ConfigDict(extra="forbid")

    step: int
    """1-based."""
    text: str


class SplitRow(BaseModel):
    """One solution of a split, with its error steps and where it came from.

    Only `id`, `category`, `modified_process` and `error_steps` are needed to evaluate a row; the rest default, so
    hand-made rows and splits written before a column existed still read (`from_record` leaves out columns this
    model does not know)."""

    model_config = ConfigDict(extra="forbid")

    # PRMBench's fields, in its order (`curate.exports.PRMBENCH_FIELDS`)
    original_question: str = ""
    modified_question: str = ""
    original_process: list[str] = Field(default_factory=list)
    modified_process: list[str]
    modified_steps: list[int] = Field(default_factory=list)
    error_steps: list[int]
    """1-based numbers of the steps that are wrong."""
    reason: str = ""
    idx: str = ""
    """Unique per classification (PRMBench keeps the first record per idx): the source's idx, `_2`, `_3`, ... after."""
    question: str = ""
    classification: str = ""
    # the toolkit's
    source_idx: str = ""
    id: str
    category: str
    category_name: str = ""
    domain: str = ""
    subject: str | None = None
    images: list[str] = Field(default_factory=list)
    trajectory_id: str = ""
    problem_key: str = ""
    """The source problem (`injector.model.problem.row_problem_key`): train/test splits keep it on one side."""
    sample: int = 0
    run: str = ""
    """The run directory's name (empty for a source added as a correct control)."""
    reviewed: bool = False
    reviewer: str = ""
    warnings: list[str] = Field(default_factory=list)
    explanations: list[StepExplanation] = Field(default_factory=list)
    ground_truth: str | None = None
    model: str = ""
    provenance: str = "{}"
    """The candidate's provenance as JSON text (one string column in every split)."""

    # What a build needs while it assembles the rows, never written.
    _config_hash: str = PrivateAttr(default="")
    _verdict: str | None = PrivateAttr(default=None)

    def record(self) -> dict[str, Any]:
        """The row as the split's files hold it (a JSON object; the columns in order)."""
        return self.model_dump(mode="json")

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> SplitRow:
        """A row from a split's record: the columns this model knows (others are left out); pydantic's
        `ValidationError` when one of them is wrong."""
        return cls.model_validate({key: value for key, value in record.items() if key in cls.model_fields})
