"""The engine interface: given the messages for one unit, return the model's answer text and its cost."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..taxonomy import Category
from ..trajectory import Trajectory


@dataclass
class Proposal:
    """What an engine answers for one request: raw text, parsed and validated downstream like any model's."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)
    """prompt_tokens and completion_tokens, when known."""
    cost: float | None = None
    """USD, when the engine knows its price."""
    details: dict[str, Any] = field(default_factory=dict)
    """Engine-specific provenance (e.g. the operator an offline engine used)."""


class ProviderError(Exception):
    """A request the provider refused for good (400, 404, context window exceeded): the unit is rejected."""

    code = "provider_error"


class TransientProviderError(Exception):
    """A fault worth retrying (429, 5xx, timeouts, connection resets)."""

    code = "transient_failure"

    def __init__(self, message: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class NotApplicable(Exception):
    """The engine finds nothing to work on in this trajectory for this category (or no further sample)."""

    code = "not_applicable"


class Engine(Protocol):
    """Both engines (LLM and, later, offline) implement this."""

    name: str

    def describe(self) -> dict[str, Any]:
        """The settings that change outputs (part of the run configuration and of provenance)."""
        ...

    def check_ready(self) -> None:
        """Raise a UserError if the engine cannot run (e.g. a missing API key)."""
        ...

    def unsupported_reason(self, category: Category) -> str | None:
        """Why this engine cannot make `category`, or None when it can."""
        ...

    async def propose(
        self,
        messages: list[dict[str, Any]],
        *,
        trajectory: Trajectory,
        category: Category,
        seed: int,
        sample: int,
        response_schema: dict[str, Any] | None,
        output_mode: str = "edits",
        read_cache: bool = True,
    ) -> Proposal:
        """The engine's answer to `messages` in `output_mode` ("edits" or "full"); `read_cache=False` asks for a
        fresh one (a retried reject)."""
        ...
