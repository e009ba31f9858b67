"""What the step audit (injector/triage/step_audit/) records on a candidate when it is written: flags, never
relabelling. Here, below the run loop, so a `Candidate` can carry it as a typed field."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

FlagKind = Literal["unlabelled_false_step", "error_step_true", "error_step_out_of_range"]


class Finding(BaseModel):
    """One flag on a labelled record. The record's labels are never changed; a reviewer decides."""

    kind: FlagKind
    step: int
    """1-based step number (for an out-of-range index: the index as labelled)."""
    relation: str = ""
    written_value: str = ""
    true_value: str = ""
    message: str


class StepAuditFindings(BaseModel):
    """A candidate's step audit: how many steps it could check, and its flags (empty: clean)."""

    steps: int
    checked_steps: int
    findings: list[Finding] = Field(default_factory=list)
    false_in_error_steps: int = 0
    """False relations in the steps labelled as errors: the algebra agreeing with the labels (triage routing)."""

    @property
    def flagged(self) -> bool:
        return bool(self.findings)
