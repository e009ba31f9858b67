"""The engine contract: given the messages for one unit, return the model's answer text and its cost.

`Engine` is a base class: an engine implements `describe` and `propose`, and overrides the defaults that do not fit
it. The run loop and the dry run use only what is declared here (no probing for optional methods), so any client
works (litellm, an in-house HTTP client, a batch API, rules): see `tests/test_contracts.py` for a batch engine
without litellm.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from injector.model.codes import ReasonCode
from injector.util.errors import InjectorError, UserError
from injector.taxonomy import Category
from injector.model.trajectory import Trajectory


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


class ProviderError(InjectorError):
    """A request the provider refused for good (400, 404, context window exceeded): the unit is rejected."""

    code = ReasonCode.PROVIDER_ERROR


class AnswerRefused(ProviderError):
    """An answer larger than the client's cap (`max_answer_bytes`): refused unread, the unit rejected."""

    code = ReasonCode.ANSWER_TOO_LARGE


class TransientProviderError(InjectorError):
    """A fault worth retrying (429, 5xx, timeouts, connection resets)."""

    code = ReasonCode.TRANSIENT_FAILURE

    def __init__(self, message: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class NotApplicable(InjectorError):
    """The engine finds nothing to work on in this trajectory for this category (or no further sample)."""

    code = ReasonCode.NOT_APPLICABLE


CHARS_PER_TOKEN = 4
"""The rough count an engine without a tokenizer uses (the dry run's prompt tokens, the rate limiter's estimate)."""


class Engine(ABC):
    """What the run loop, the dry run and `inject_one` need from an engine (the LLM and the offline one are two).

    Required: `name`, `describe` and `propose`. Everything else has a default for an engine that answers each
    request on its own, at no cost, in one attempt.

    A batch engine (submit many, collect later) sets `collects_batches`: its `propose` files the request before it
    first awaits anything, then waits for the answer; the run loop calls `flush` whenever every worker is waiting on
    the engine (no further request can come until one is answered), so the engine sends what it has collected and
    resolves the waiting proposals. `--concurrency` is then the most requests one batch holds.
    """

    name: str = "engine"
    """Short engine name, recorded as `engine` in the run configuration and provenance."""
    takes_feedback: bool = False
    """Whether a failed answer is worth sending back with the validator's messages (re-asks, `--max-attempts`);
    an engine that would answer the same again gets a single attempt."""
    collects_batches: bool = False
    """Whether `propose` waits for `flush` (a batch engine)."""
    retries: int = 0
    """Transient faults retried so far (shown in progress; not attempts); an engine that retries counts them."""
    judges: bool = False
    """Whether `ask` answers any prompt (a critique for `inject verify`, a rollout): an LLM can, rules cannot."""

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """The settings that change outputs (part of the run configuration and of provenance): at least `engine`
        (its name), `model` and `api_base_host`."""

    def servers(self) -> list[dict[str, Any]]:
        """The servers this engine spreads requests over, as the manifest records them (hosts, limits, the names of
        key variables; never a key). Default: none listed (one server is `describe`'s `api_base_host`)."""
        return []

    def check_ready(self) -> None:
        """Raise a UserError if the engine cannot run (e.g. a missing API key). Default: always ready."""

    def take_worker_share(self, workers: int) -> list[Any]:
        """In one of `workers` worker processes: take this process's share of the rate limits and its own
        connections; return what was replaced, for the caller to keep alive (a forked copy must not close what the
        parent still uses). Default: nothing shared, nothing replaced."""
        return []

    def rate_limits(self) -> tuple[float | None, float | None]:
        """The requests and tokens per minute this engine keeps to (`--rpm`, `--tpm`; None: no limit). Default:
        none."""
        return None, None

    def unsupported_reason(self, category: Category) -> str | None:
        """Why this engine cannot make `category`, or None when it can (the default: it can make every one)."""
        return None

    def prices(self) -> tuple[float, float] | None:
        """Dollars per prompt token and per completion token, or None when unknown (then `--max-cost` refuses to
        start and costs show as unknown). Default: free."""
        return 0.0, 0.0

    def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        """Prompt tokens of `messages` (the dry run's count). Default: about four characters a token."""
        return sum(len(str(message["content"])) for message in messages) // CHARS_PER_TOKEN

    def count_text_tokens(self, text: str) -> int:
        """Tokens of a bare text, without chat framing. Default: about four characters a token."""
        return len(text) // CHARS_PER_TOKEN

    async def flush(self) -> None:
        """Send the requests collected so far (a batch engine); the run loop calls it when every worker waits on
        this engine. Default: nothing to do (each request was sent when `propose` was called)."""

    @abstractmethod
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
        fresh one (a retried reject). Raises `ProviderError`, `TransientProviderError` (after the engine's own
        retries) or `NotApplicable` to reject the unit with that code."""

    async def ask(self, messages: list[dict[str, Any]], *, seed: int, response_schema: dict[str, Any] | None = None,
                  schema_name: str = "answer", read_cache: bool = True) -> Proposal:
        """The answer to any prompt (`judges` engines only): `inject verify`'s critiques and rollouts. Raises
        `ProviderError` or `TransientProviderError` as `propose` does."""
        raise UserError(f"the {self.name} engine answers no free prompt (it cannot judge); pass --model with an "
                        "LLM, e.g. --model gpt-4o")
