"""How a record was made: `Provenance` (on every candidate and reject), its `Usage` and `Attempt`s, and
`EngineInfo`, what an engine says about itself (`Engine.describe()`), which provenance and a run's configuration
carry.

On disk provenance is one flat JSON object (the engine's description first, then what the unit did); the models keep
that shape, so run directories written before they existed read as they are (tests/test_records_compat.py).
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Usage(BaseModel):
    """Tokens an answer, or all the answers of a unit, took."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens)

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Attempt(BaseModel):
    """One attempt at a unit: the reason codes its answer failed with (none: it passed)."""

    model_config = ConfigDict(extra="forbid")

    codes: list[str] = Field(default_factory=list)
    cached: bool = False
    """The answer came from the request cache (written only when it did)."""


class EngineInfo(BaseModel):
    """An engine's description of itself: its name, model and server (host and port, never userinfo), and the
    settings of its kind that change outputs (`temperature`, `max_tokens`, `schema`, `operators`,
    `deployment_models`, ...) as extra fields, since each kind has its own."""

    model_config = ConfigDict(extra="allow")

    engine: str
    model: str | None = None
    api_base_host: str | None = None

    @property
    def settings(self) -> dict[str, Any]:
        """The settings of the engine's kind (the extra fields)."""
        return dict(self.model_extra or {})


class Provenance(BaseModel):
    """How a candidate or reject was made: the engine (its `EngineInfo`, flat), the taxonomy and template, the seed
    and output mode, every attempt, the tokens and dollars spent, and when.

    Every field may be missing: a record another tool (or a test) wrote may carry only some, e.g. `{"engine":
    "source"}` for a split's correct originals. Extra fields are the engine's own settings and what it reported on
    its answers (the offline engine's `operator`, a batch engine's `batch`)."""

    model_config = ConfigDict(extra="allow")

    engine: str | None = None
    model: str | None = None
    api_base_host: str | None = None
    taxonomy: str | None = None
    taxonomy_hash: str | None = None
    template_hash: str | None = None
    seed: int | None = None
    output_mode: str | None = None
    attempts: list[Attempt] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    cost: float | None = None
    """Dollars the unit's answers cost; None when any had no known price (or none was recorded)."""
    toolkit_version: str | None = None
    time: str | None = None
    legacy: dict[str, Any] = Field(default_factory=dict)
    """Top-level fields an older writer put on the record, which the record models no longer have: kept here, as
    they were, when such a record is read (written only when there were some)."""

    @property
    def details(self) -> dict[str, Any]:
        """The engine's own fields (its settings and what it reported on its answers)."""
        return dict(self.model_extra or {})
