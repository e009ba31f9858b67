"""`Trajectory`: the one input model every source is mapped onto."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Trajectory(BaseModel):
    """A fully correct step-by-step solution of one question."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Stable id, unique within a source (e.g. `prm800k:phase1_train:17`)."""
    question: str
    steps: list[str]
    """The solution's steps, text kept exactly as the source gives it."""
    answer: str | None = None
    """The known correct final answer (ground truth), when the source has one."""
    images: list[str] = Field(default_factory=list)
    """Local paths or URLs of images the question refers to."""
    subject: str | None = None
    """The discipline (math, physics, chemistry, biology, …), for templates that use it."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Source-specific extras (e.g. PRMBench's `idx`, the raw `question`)."""

    @field_validator("steps")
    @classmethod
    def _steps_not_empty(cls, steps: list[str]) -> list[str]:
        if not steps:
            raise ValueError("the step list is empty")
        return steps
