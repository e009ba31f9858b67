"""The toolkit's front door as typed requests: what `inject run` does, callable from Python. A `RunRequest` holds
the engine's settings and the run's, and its validators own the rules on how run options combine (the messages
name settings in backticks; the CLI shows them as its flags)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from injector.engines.settings import (DEFAULT_MAX_BYTES, DEFAULT_MAX_REQUESTS, DEFAULT_POLL_SECONDS, BatchSettings,
                                       EngineSettings, SettingsConflict)

DEFAULT_CONCURRENCY, BATCH_CONCURRENCY = 16, 5000


class RunRequest(BaseModel):
    """One `inject run`: its engine, where it writes, how it spreads the work, and its batch settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    engine: EngineSettings = EngineSettings()
    out: Path | None = None
    concurrency: int | None = Field(None, ge=1)
    """Requests in flight; None: 16, or 5000 (the most requests one round holds) with `batch`."""
    workers: int = Field(1, ge=1)
    executor: Literal["local", "ray"] = "local"
    ray_workers: int | None = Field(None, ge=1)
    dry_run: bool = False
    batch: bool = False
    batch_max_requests: int = Field(DEFAULT_MAX_REQUESTS, ge=1)
    batch_max_bytes: int = Field(DEFAULT_MAX_BYTES, ge=1)
    batch_poll_seconds: float = Field(DEFAULT_POLL_SECONDS, ge=0)
    wait: bool = True

    @model_validator(mode="after")
    def _combinations(self) -> RunRequest:
        if self.workers > self.requests_in_flight:
            raise SettingsConflict(f"`workers={self.workers}` needs `concurrency={self.workers}` or more (each "
                                   "worker keeps at least one request in flight)")
        if not self.wait and not self.batch:
            raise SettingsConflict("`wait=false` goes with `batch`")
        if self.batch and self.out is None:
            raise SettingsConflict("`batch` needs `out` (the same command, run again, collects the batches there)")
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
