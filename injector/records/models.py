"""What a run writes, as records: `Candidate` and `Rejection` (one JSONL line each) and `RunManifest`
(`manifest.json`). `RunDirectory` (records/directory.py) writes and reads them; records/jsonl.py reads their lines."""
from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from injector.answer.contract import FullAnswer, MultiSolutionAnswer
from injector.model.provenance import Provenance, Usage
from injector.model.trajectory import Trajectory
from injector.records.audit_flags import StepAuditFindings

CANDIDATES_FILE = "candidates.jsonl"
REJECTS_FILE = "rejects.jsonl"
MANIFEST_FILE = "manifest.json"


class StoredRecord(BaseModel):
    """What candidates and rejects share: no field the model does not know (a misspelt one is an error where the
    record is made), and lines an older writer left with other top-level fields still read (`from_stored`)."""

    model_config = ConfigDict(extra="forbid")

    @classmethod
    def from_stored(cls: type[Stored], value: Any) -> Stored:
        """The record a JSONL line holds: top-level fields the model does not have move, as they were, into
        `provenance.legacy` (written back there); anything else is validated as it is. (Each record declares its
        `provenance` where it has always stood in the line.)"""
        if isinstance(value, dict):
            value = _legacy_moved(value, set(cls.model_fields))
        return cls.model_validate(value)


Stored = TypeVar("Stored", bound=StoredRecord)


def _legacy_moved(value: dict[str, Any], fields: set[str]) -> dict[str, Any]:
    unknown = {key: item for key, item in value.items() if key not in fields}
    provenance = value.get("provenance", {})
    legacy = provenance.get("legacy", {}) if isinstance(provenance, dict) else None
    if not unknown or not isinstance(legacy, dict):  # nothing to move, or a provenance validation will name
        return value
    known = {key: item for key, item in value.items() if key in fields}
    return {**known, "provenance": {**provenance, "legacy": {**legacy, **unknown}}}


class Candidate(StoredRecord):
    """An injected solution that passed validation, in PRMBench's record format plus our own fields."""

    original_question: str
    modified_question: str
    original_process: list[str] = Field(min_length=1)
    modified_process: list[str] = Field(min_length=1)
    modified_steps: list[int]
    """1-based indices into `modified_process` of the changed or inserted steps, computed from the text."""
    error_steps: list[int]
    reason: str
    idx: str
    """The source's own id (PRMBench `idx`, or the trajectory id)."""
    question: str
    """The raw problem text."""
    classification: str
    """The category's PRMBench id."""
    id: str
    category: str
    trajectory_id: str
    sample: int
    warnings: list[str] = Field(default_factory=list)
    provenance: Provenance = Field(default_factory=Provenance)
    # Written only when they apply (`RunDirectory.append` writes the fields that were set), so records keep the
    # shape they have always had on disk.
    ground_truth: str | None = None
    """The source's known final answer (PRM800K `ground_truth_answer`, PRMBench `ground_truth`), when it has one."""
    explanations: dict[str, str] | None = None
    """Error step (its 1-based number in modified_process, as a string) -> what is wrong with it."""
    subject: str | None = None
    images: list[str] = Field(default_factory=list)
    """The trajectory's images, by reference (paths or URLs), never their data."""
    problem_key: str | None = None
    """The source problem (`injector.model.problem.trajectory_problem_key`): splits keep one problem on one side."""
    step_audit: StepAuditFindings | None = None
    """The step audit's flags, recorded as the candidate is written (injector/triage/step_audit/)."""

    @field_validator("explanations")
    @classmethod
    def _explanations_name_steps(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None and not all(key.isdigit() for key in value):
            raise ValueError("expected an object {step number: text}")
        return value

    @model_validator(mode="after")
    def _steps_exist(self) -> "Candidate":
        size = len(self.modified_process)
        for name in ("modified_steps", "error_steps"):
            outside = [k for k in getattr(self, name) if not 1 <= k <= size]
            if outside:
                raise ValueError(f"{name} {outside} lie outside steps 1..{size} of modified_process")
        return self

    def as_answer(self, *, multi_solution: bool = False) -> FullAnswer | MultiSolutionAnswer:
        """The full-form answer this candidate corresponds to (explanations included), as `validate_answer` takes
        it; `multi_solution` (the category's rule) gives the multi-solution form."""
        if multi_solution:
            return MultiSolutionAnswer(modified_process=list(self.modified_process), reason=self.reason)
        return FullAnswer(modified_question=self.modified_question, modified_process=list(self.modified_process),
                          modified_steps=list(self.modified_steps), error_steps=list(self.error_steps),
                          reason=self.reason, explanations=dict(self.explanations) if self.explanations else None)

    def source_trajectory(self) -> Trajectory:
        """The correct solution this candidate was made from, as far as the record keeps it."""
        return Trajectory(id=self.trajectory_id, question=self.original_question, steps=list(self.original_process),
                          answer=self.ground_truth, images=list(self.images), subject=self.subject,
                          meta={"idx": self.idx, "question": self.question})


class Rejection(StoredRecord):
    """A unit that produced no candidate, with every reason code that applied."""

    id: str
    trajectory_id: str
    idx: str
    category: str
    sample: int
    codes: list[str]
    messages: list[str] = Field(default_factory=list)
    raw: str | None = None
    """The model's last answer text, when there was one."""
    provenance: Provenance = Field(default_factory=Provenance)


class SourceCounts(BaseModel):
    """What the input loader read, selected and skipped (one invocation of a run)."""

    model_config = ConfigDict(extra="forbid")

    read: int = 0
    """Records (non-blank lines or rows) read."""
    selected: int = 0
    """Trajectories yielded."""
    invalid: int = 0
    """Malformed records skipped under `skip_invalid`."""
    skipped: dict[str, int] = Field(default_factory=dict)
    """Reason -> records that are valid but were not selected."""


class RunCounts(BaseModel):
    """What a run directory holds: candidates and rejects, by reason code and by category."""

    model_config = ConfigDict(extra="forbid")

    candidates: int = 0
    rejects: int = 0
    codes: dict[str, int] = Field(default_factory=dict)
    """Reason code -> rejects carrying it."""
    by_category: dict[str, dict[str, int]] = Field(default_factory=dict)
    """Category -> {"candidates": n, "rejects": m} (an outcome with none is left out)."""


class RunTotals(BaseModel):
    """What everything a run directory holds cost, summed over its records' provenance."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    """Dollars, over the records whose cost is known."""
    cost_known: bool = True
    """False when any record's cost is unknown (then `cost` is a lower bound)."""

    def add(self, usage: Usage, cost: float | None) -> None:
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if cost is None:
            self.cost_known = False
        else:
            self.cost += cost


class Spending(BaseModel):
    """What a run directory has spent over all its invocations: what `--max-cost` caps (the manifest keeps it)."""

    model_config = ConfigDict(extra="forbid")

    total: float | None = 0.0
    """Dollars; None once any answer had no known price."""
    largest_unit: float = 0.0
    """The most one unit has cost (all its attempts): the reserve a unit needs before it may start under a cap."""


class RunManifest(BaseModel):
    """`manifest.json`: how a run was made and what it produced."""

    model_config = ConfigDict(extra="forbid")

    # `inject run` writes all of these; a manifest another tool (or hand) wrote may leave the descriptive ones out,
    # and its run directory is still read (reviewed, built, stated). No config_hash: no run continues in it.
    command: list[str] = Field(default_factory=list)
    config: dict[str, Any] = Field(default_factory=dict)
    """The run's configuration (input identity, taxonomy, categories, the engine's settings, ...): its keys depend
    on the input and the engine, and its hash is the run's identity, so it stays the mapping that was hashed."""
    config_hash: str | None = None
    toolkit_version: str | None = None
    started: str | None = None
    finished: str | None = None
    status: str = "running"
    """running, finished, interrupted, budget_exceeded, batches_pending (`--batch --no-wait`) or failed."""
    categories: dict[str, dict[str, str]] = Field(default_factory=dict)
    """id -> name, domain and classification of each category run (categories built in Python included)."""
    skipped_categories: dict[str, str] = Field(default_factory=dict)
    """Categories the engine cannot make, with the reason (they are not units)."""
    source: SourceCounts = Field(default_factory=SourceCounts)
    """What the input loader read, selected and skipped (this invocation)."""
    image_base: str | None = None
    """The directory the run's local images were checked to lie under (the review app serves only from there)."""
    counts: RunCounts = Field(default_factory=RunCounts)
    totals: RunTotals = Field(default_factory=RunTotals)
    deployments: list[dict[str, Any]] = Field(default_factory=list)
    """The servers a Router run spread its requests over (`Engine.servers`: hosts and limits, never keys)."""
    spending: Spending | None = Field(default=None, exclude_if=lambda value: value is None)
    """Spent over every invocation (None in manifests written before it was kept: `totals.cost` stands in; left
    out of such a manifest when it is written back, so it reads as it was)."""


def unit_id(trajectory_id: str, category_id: str, sample: int) -> str:
    """Deterministic id of a unit of work (trajectory, category, sample)."""
    return f"{trajectory_id}::{category_id}::{sample}"
