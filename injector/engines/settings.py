"""`EngineSettings`: everything an engine is built from, as one typed value, and the rules on how settings combine.

The rules live here once, as model validators; their messages name settings in backticks (`` `client=openai` ``,
`` `api_base` ``), which the CLI rewrites into its flags (`cli/flags.py`). A library user sees the settings' names.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from injector.util.answer_limits import DEFAULT_MAX_ANSWER_BYTES
from injector.util.errors import UserError

DEFAULT_MAX_REQUESTS = 50_000
"""OpenAI's documented limit of requests in one batch file."""
DEFAULT_MAX_BYTES = 200 * 1024 * 1024
"""OpenAI's documented limit of a batch input file (200 MB)."""
DEFAULT_POLL_SECONDS = 30.0


class SettingsConflict(UserError):
    """Settings that do not go together (or a value out of range); the message names the settings in backticks."""


class BatchSettings(BaseModel):
    """How a run sends through a provider's batch API: where it records batches, the provider's limits, polling,
    waiting."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_dir: Path
    max_requests: int = Field(default=DEFAULT_MAX_REQUESTS, ge=1)
    max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1)
    poll_seconds: float = Field(default=DEFAULT_POLL_SECONDS, ge=0)
    wait: bool = True


class EngineSettings(BaseModel):
    """What an engine is built from (`registry.engine_from_settings`).

    `model` is a registered engine kind's name (`offline`, the default when no server is named) or a litellm model
    string. Several `api_bases`, or a `deployments` file, spread the requests over those servers; `batch` sends them
    through the provider's batch API. `client` picks how one server is reached ("auto", "litellm", "openai"; None:
    the INJECT_CLIENT variable, else auto). Engines that send no requests ignore the LLM settings.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str | None = None
    api_bases: tuple[str, ...] = ()
    deployments: Path | None = None
    batch: BatchSettings | None = None
    temperature: float = 1.0
    max_tokens: int | None = Field(default=4096, ge=1)
    use_schema: bool = True
    timeout: float = Field(default=300.0, gt=0)
    """Seconds one answer may take, all of it: connecting, the first byte and the whole body."""
    max_answer_bytes: int = Field(default=DEFAULT_MAX_ANSWER_BYTES, ge=1024)
    """Largest answer read from a server (bytes); a larger one is refused unread (`answer_too_large`)."""
    rpm: float | None = Field(default=None, gt=0)
    tpm: float | None = Field(default=None, gt=0)
    use_cache: bool = True
    cache_path: Path | None = None
    price_in: float | None = Field(default=None, ge=0)
    price_out: float | None = Field(default=None, ge=0)
    client: Literal["auto", "litellm", "openai"] | None = None

    @field_validator("api_bases", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if value is None:
            return ()
        return (value,) if isinstance(value, str) else tuple(value)

    @model_validator(mode="after")
    def _combinations(self) -> EngineSettings:
        several = self.deployments is not None or len(self.api_bases) > 1
        if (self.price_in is None) != (self.price_out is None):
            raise SettingsConflict("give both `price_in` and `price_out` (dollars per million tokens)")
        if self.client == "openai" and (self.batch is not None or several):
            raise SettingsConflict("`client=openai` sends to one server: a Router (`deployments`, several "
                                   "`api_base`) and `batch` go through litellm; drop `client` or set "
                                   "`client=litellm`")
        if self.batch is not None and (several or self.model is None):
            raise SettingsConflict("`batch` sends through one provider's batch API: give `model` with an LLM and at "
                                   "most one `api_base` (no `deployments`)")
        if self.deployments is not None and self.api_bases:
            raise SettingsConflict("give either `deployments` or `api_base`, not both (list every server in the file)")
        if len(self.api_bases) > 1 and self.model is None:
            raise SettingsConflict("several `api_base` need `model`, e.g. `model=openai/qwen`")
        return self

    @property
    def api_base(self) -> str | None:
        """The one server, when one is named."""
        return self.api_bases[0] if len(self.api_bases) == 1 else None

    @property
    def several_servers(self) -> bool:
        """A Router's settings: a deployments file or several api bases."""
        return self.deployments is not None or len(self.api_bases) > 1

    def llm_options(self) -> dict[str, Any]:
        """The keyword arguments every `LLMEngine` takes from these settings (not the limiter: a Router's is its
        own)."""
        from injector.engines.cache import RequestCache

        return dict(temperature=self.temperature, max_tokens=self.max_tokens, use_schema=self.use_schema,
                    timeout=self.timeout, max_answer_bytes=self.max_answer_bytes, cache=RequestCache(self.cache_path) if self.use_cache else None,
                    price_in=self.price_in, price_out=self.price_out)


def settings_from(**values: Any) -> EngineSettings:
    """`EngineSettings(**values)`, a value out of range raised as a one-line `SettingsConflict` naming the setting."""
    try:
        return EngineSettings(**values)
    except ValidationError as exc:
        raise SettingsConflict(validation_message(exc)) from None


def validation_message(exc: ValidationError) -> str:
    """One line from a pydantic error: the first problem, the setting it concerns in backticks."""
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "__root__")
    message = str(first.get("msg", "invalid value"))
    return f"`{where}`: {message}" if where else message
