"""The toolkit's front door as typed requests: what `inject run`, `verify`, `build` and `eval` do, callable from
Python. Each command's request (`RunRequest`, `VerifyRequest`, `BuildRequest`, `EvalRequest`) holds its settings,
and its validators own the rules on how they combine (the messages name settings in backticks; the CLI shows them
as its flags). `make_request` builds one with a value out of range as a one-line `SettingsConflict`."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from injector.engines.settings import (DEFAULT_MAX_BYTES, DEFAULT_MAX_REQUESTS, DEFAULT_POLL_SECONDS, BatchSettings,
                                       EngineSettings, SettingsConflict, validation_message)
from injector.inject.unit import DEFAULT_MAX_ATTEMPTS
from injector.model.choices import DEFAULT_OUTPUT_MODE, OutputMode

if TYPE_CHECKING:
    from injector.curate.build import BuildReport, BuildRequest, build
    from injector.evaluate import EvalRequest, EvalResult, compare, evaluate, write_comparison
    from injector.runner.spec import RunSpec
    from injector.taxonomy import Category, Taxonomy
    from injector.triage.verify import VerifyPlan, VerifySpec, VerifySummary

DEFAULT_CONCURRENCY, BATCH_CONCURRENCY = 16, 5000
Request = TypeVar("Request", bound=BaseModel)

__all__ = ["BuildReport", "BuildRequest", "EngineSettings", "EvalRequest", "EvalResult", "RunRequest", "VerifyRequest",
           "build", "build_engine", "compare", "evaluate", "make_request", "plan_verify", "run_spec", "units_executor",
           "verify", "write_comparison"]

_FROM_STAGES = {"BuildReport": "injector.curate.build", "BuildRequest": "injector.curate.build",
                "build": "injector.curate.build", "EvalRequest": "injector.evaluate", "EvalResult": "injector.evaluate",
                "compare": "injector.evaluate", "evaluate": "injector.evaluate",
                "write_comparison": "injector.evaluate"}
"""The requests and calls that live with their stage, imported when first asked for (a run needs neither)."""


def __getattr__(name: str) -> Any:
    if name not in _FROM_STAGES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_FROM_STAGES[name]), name)


def make_request(kind: type[Request], /, **values: Any) -> Request:
    """`kind(**values)` (a request or settings model), a value out of range (pydantic's `ValidationError`) raised as
    a one-line `SettingsConflict` naming the setting."""
    try:
        return kind(**values)
    except ValidationError as exc:
        raise SettingsConflict(validation_message(exc)) from None


class RunRequest(BaseModel):
    """One `inject run`: its engine, where it writes, how it spreads the work, and its batch settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: EngineSettings = EngineSettings()
    out: Path | None = None
    concurrency: int | None = Field(default=None, ge=1)
    """Requests in flight; None: 16, or 5000 (the most requests one round holds) with `batch`."""
    workers: int = Field(default=1, ge=1)
    executor: Literal["local", "ray"] = "local"
    ray_workers: int | None = Field(default=None, ge=1)
    dry_run: bool = False
    batch: bool = False
    batch_max_requests: int = Field(default=DEFAULT_MAX_REQUESTS, ge=1)
    batch_max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1)
    batch_poll_seconds: float = Field(default=DEFAULT_POLL_SECONDS, ge=0)
    wait: bool = True
    samples: int = Field(default=1, ge=1)
    seed: int = 0
    output_mode: OutputMode = DEFAULT_OUTPUT_MODE
    max_attempts: int = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1)
    retry_rejects: bool = False
    max_cost: float | None = Field(default=None, ge=0)
    """Dollars the run directory may spend over all its invocations (`RunSpec.max_cost`)."""
    max_cost_per_invocation: float | None = Field(default=None, ge=0)
    """Dollars this invocation may spend."""
    log_prompts: bool = False
    """Keep every request and answer in `out/prompts.jsonl` (`RunSpec.log_prompts`)."""

    @model_validator(mode="after")
    def _combinations(self) -> RunRequest:
        if self.workers > self.requests_in_flight:
            raise SettingsConflict(f"`workers={self.workers}` needs `concurrency={self.workers}` or more (each "
                                   "worker keeps at least one request in flight)")
        if not self.wait and not self.batch:
            raise SettingsConflict("`wait=false` goes with `batch`")
        if self.batch and self.out is None:
            raise SettingsConflict("`batch` needs `out` (the same command, run again, collects the batches there)")
        if self.log_prompts and self.executor == "ray":
            raise SettingsConflict("`log_prompts` and `executor=ray` do not combine yet: log the prompts of a local "
                                   "run (`workers` included)")
        if self.batch and self.executor == "ray":
            raise SettingsConflict("`batch` and `executor=ray` do not combine: a batch run needs one process")
        if self.executor == "ray" and self.engine.deployments is not None and not self.dry_run:
            raise SettingsConflict("`deployments` and `executor=ray` do not combine yet: use `api_base` (repeatable) "
                                   "with `rpm`/`tpm`, which are divided among the workers")
        if self.workers > 1 and not self.dry_run and (self.executor == "ray" or self.batch
                                                      or self.engine.deployments is not None):
            raise SettingsConflict("`workers` goes with the local executor and one server or `api_base` list: use "
                                   "`ray_workers` with `executor=ray`; `batch` and `deployments` run in one process")
        return self

    @property
    def requests_in_flight(self) -> int:
        if self.concurrency is not None:
            return self.concurrency
        return BATCH_CONCURRENCY if self.batch else DEFAULT_CONCURRENCY

    def engine_settings(self) -> EngineSettings:
        """The engine's settings, with the batch settings and the default model (offline, unless a deployments file
        names the servers) filled in."""
        model = self.engine.model or (None if self.engine.deployments is not None else "offline")
        batch = None
        if self.batch:
            assert self.out is not None
            batch = BatchSettings(run_dir=self.out, max_requests=self.batch_max_requests,
                                  max_bytes=self.batch_max_bytes, poll_seconds=self.batch_poll_seconds,
                                  wait=self.wait)
        # Validated again (model_copy would not): the batch settings join the combination rules.
        return EngineSettings(**{**dict(self.engine), "model": model, "batch": batch,
                                 "use_cache": self.engine.use_cache and not self.dry_run})


def run_spec(request: RunRequest, taxonomy: Taxonomy, categories: list[Category], limit: int | None) -> RunSpec:
    """The `RunSpec` of a run request over `categories` of `taxonomy` (a dry run writes nowhere; a run without
    `out` writes to `runs/<UTC date-time>`); every candidate gets its step audit as it is written."""
    from injector.runner.loop import default_run_dir
    from injector.runner.spec import RunSpec
    from injector.triage.step_audit.hooks import audit_on_write

    out = request.out if request.out is not None else None if request.dry_run else default_run_dir()
    return RunSpec(taxonomy=taxonomy, categories=categories, samples=request.samples, seed=request.seed,
                   output_mode=request.output_mode, limit=limit, max_attempts=request.max_attempts,
                   retry_rejects=request.retry_rejects, out=out, concurrency=request.requests_in_flight,
                   max_cost=request.max_cost, max_cost_per_invocation=request.max_cost_per_invocation,
                   log_prompts=request.log_prompts, candidate_audit=audit_on_write)  # the step audit, recorded per candidate


def build_engine(request: RunRequest) -> Any:
    """The engine a run request describes (`engines.registry`)."""
    from injector.engines.registry import engine_from_settings

    return engine_from_settings(request.engine_settings())


def units_executor(request: RunRequest) -> Any:
    """Where the units run: None (this process), worker processes, or Ray actors."""
    if request.dry_run:
        return None
    if request.executor == "ray":
        from injector.runner.executors.ray_actors import RayExecutor, WorkerEngine

        settings = request.engine_settings()
        options: dict[str, Any] = settings.model_dump(exclude={"model", "api_bases", "batch"})
        options["api_base"] = list(settings.api_bases)
        if settings.cache_path:  # a worker's working directory is not this one
            options["cache_path"] = os.path.abspath(settings.cache_path)
        return RayExecutor(WorkerEngine(settings.model, options), workers=request.ray_workers)
    if request.workers > 1:
        from injector.runner.executors.processes import WorkerProcesses

        return WorkerProcesses(request.workers)
    return None


class VerifyRequest(BaseModel):
    """One `inject verify`: the run to triage, the judge's settings (`judge.model` is the judge), the model that
    continues solutions, and how the judging goes (votes, rollouts, seed, concurrency, budget)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_dir: Path
    judge: EngineSettings
    rollout_model: str | None = None
    """The model that continues solutions (default: the judge's; the same server)."""
    votes: int = Field(default=1, ge=1)
    votes_all: bool = False
    rollouts: int = Field(default=0, ge=0)
    seed: int = 0
    concurrency: int = Field(default=DEFAULT_CONCURRENCY, ge=1)
    max_cost: float | None = Field(default=None, ge=0)
    taxonomy: str | None = None
    dry_run: bool = False

    @model_validator(mode="after")
    def _combinations(self) -> VerifyRequest:
        if not self.judge.model:
            raise SettingsConflict("verify needs a judge: give `model`, e.g. `model=gpt-4o`")
        if self.judge.several_servers or self.judge.batch is not None:
            raise SettingsConflict("verify sends to one server: give at most one `api_base` (no `deployments`, "
                                   "no `batch`)")
        return self

    def spec(self) -> VerifySpec:
        from injector.triage.verify import VerifySpec

        return VerifySpec(votes=self.votes, votes_all=self.votes_all, rollouts=self.rollouts, seed=self.seed,
                          concurrency=self.concurrency, max_cost=self.max_cost, taxonomy=self.taxonomy)


def _verify_engines(request: VerifyRequest) -> tuple[Any, Any]:
    """The judge and the engine that continues solutions (the judge itself unless another model is named): one
    rate limit and one cache for both."""
    from injector.engines import LLMEngine
    from injector.engines.cache import RequestCache
    from injector.engines.limits import RateLimiter

    settings = request.judge
    cache = None if not settings.use_cache or request.dry_run else RequestCache(settings.cache_path)
    limiter = RateLimiter(settings.rpm, settings.tpm)

    def engine(name: str) -> Any:
        return LLMEngine(name, api_base=settings.api_base, temperature=settings.temperature,
                         max_tokens=settings.max_tokens, use_schema=settings.use_schema, timeout=settings.timeout,
                         limiter=limiter, cache=cache, price_in=settings.price_in, price_out=settings.price_out)

    judge = engine(str(settings.model))
    rollout = request.rollout_model
    return judge, engine(rollout) if rollout and rollout != settings.model else judge


def plan_verify(request: VerifyRequest) -> VerifyPlan:
    """What `verify` would send: critiques, prompt tokens, estimated cost; sends nothing."""
    from injector.triage.verify import plan_verify as plan

    judge, rollout = _verify_engines(request)
    return plan(request.run_dir, judge, request.spec(), rollout_engine=rollout)


def verify(request: VerifyRequest, on_progress: Callable[[VerifySummary], None] | None = None) -> VerifySummary:
    """A blind judge's verdict on every candidate of the run (`RUN/verify.jsonl`, `RUN/verify-summary.json`)."""
    from injector.triage.verify import verify as verify_run

    judge, rollout = _verify_engines(request)
    return verify_run(request.run_dir, judge, request.spec(), rollout_engine=rollout, on_progress=on_progress)
