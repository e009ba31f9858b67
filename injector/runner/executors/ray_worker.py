"""The worker side of `inject run --executor ray` (see `ray_actors`): a Ray actor with its own engine that runs the
units it is sent with `inject_one`, and appends its records itself when it sees the driver's run directory."""
from __future__ import annotations

import asyncio
import fcntl
import os
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from injector.engines import from_model
from injector.engines.base import Engine
from injector.inject.unit import inject_one
from injector.model.trajectory import Trajectory
from injector.records.directory import RunDirectory
from injector.records.models import Candidate, Rejection
from injector.runner.spec import RunSpec
from injector.util.errors import InjectorError, UserError


UnitPayload = tuple[Trajectory, str, int, bool]
"""What the driver sends a worker for one unit: the trajectory, the category id, the sample, and whether to read
the request cache (not for a rejected unit tried again: its cached answers are the ones that failed)."""

Record = Candidate | Rejection


@dataclass(frozen=True)
class WorkerEngine:
    """How each worker builds its engine: `engines.from_model(model, **options)`, with `rpm` and `tpm` divided by
    the number of workers so that all of them together stay under the limits."""

    model: str | None
    options: dict[str, Any] = field(default_factory=dict)

    def __call__(self, workers: int) -> Engine:
        options = dict(self.options)
        for limit in ("rpm", "tpm"):
            if options.get(limit):
                options[limit] = options[limit] / workers
        return from_model(self.model, **options)


def sees_run_directory(path: Path) -> bool:
    """Whether another process holds the run lock of `path`: then this process sees the driver's own run directory
    (the same machine, or a shared filesystem whose locks work) and may append to it. A copy of the directory (a
    `ray job submit --working-dir` upload), no directory at all, or a filesystem without locks: False."""
    try:
        fd = os.open(path / ".lock", os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.flock(fd, fcntl.LOCK_UN)  # nobody held it: a copy, or a directory no run holds
        return False
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


@dataclass
class WorkerJob:
    """Everything one worker needs, sent once when it starts."""

    spec: RunSpec
    make_engine: Callable[[int], Engine]
    workers: int
    concurrency: int
    budget: float | None
    """Dollars this worker may spend (its share of --max-cost), or None for no limit."""
    run_path: str
    config_hash: str
    engine_description: dict[str, Any]
    """The driver's `engine.describe()`: a worker whose engine differs would write records of another run."""
    append: bool | None = None
    """Append records in the worker (True), return them to the driver (False), or decide by `sees_run_directory`."""


@dataclass
class BatchResult:
    """A worker's answer to one batch."""

    records: list[Record]
    appended: bool
    """The worker appended `records` to the run directory (else the driver does)."""
    budget_reached: bool = False
    failure: tuple[str, int] | None = None
    """(message, exit code) of what stopped the worker."""
    retries: int = 0
    """The worker engine's transient retries so far."""
    node: str = ""
    """The Ray node the worker runs on."""


class ShardWorker:
    """One Ray worker (an async actor): runs the units it is sent with `inject_one`, at most `job.concurrency` at a
    time, until its share of the budget is spent or something stops it."""

    def __init__(self, job: WorkerJob):
        self.job = job
        self.engine: Engine | None = None
        self.run_dir: RunDirectory | None = None
        self.appends = False
        self.spent: float | None = 0.0
        self.failure: tuple[str, int] | None = None
        self.node = ""
        self._slots: asyncio.Semaphore | None = None
        self.categories = {category.id: category for category in job.spec.categories}

    def pid(self) -> int:
        """The worker's process id (to kill it in a test; to wait for its death after `ray.kill`)."""
        return os.getpid()

    def _start(self) -> None:
        # Built in the actor's event loop thread, on first use: an engine's request cache (SQLite) must be used by
        # the thread that opened it.
        import ray

        job = self.job
        self._slots = asyncio.Semaphore(job.concurrency)
        self.node = ray.get_runtime_context().get_node_id()
        try:
            self.appends = sees_run_directory(Path(job.run_path)) if job.append is None else job.append
            if self.appends:
                self.run_dir = RunDirectory(job.run_path)
                self.run_dir.join(job.config_hash)
            self.engine = job.make_engine(job.workers)
            self.engine.check_ready()
            if self.engine.describe() != job.engine_description:
                raise UserError(f"a Ray worker built a different engine ({self.engine.describe()}) than the run's "
                                f"({job.engine_description})")
        except InjectorError as exc:
            self.failure = (str(exc), exc.exit_code)

    def out_of_budget(self) -> bool:
        budget = self.job.budget
        return budget is not None and self.spent is not None and self.spent >= budget

    async def process(self, batch: list[UnitPayload]) -> BatchResult:
        if self._slots is None:
            self._start()
        done = await asyncio.gather(*(self._one(payload) for payload in batch))
        return BatchResult(records=[record for record in done if record is not None], appended=self.appends,
                           budget_reached=self.out_of_budget(), failure=self.failure,
                           retries=self.engine.retries if self.engine is not None else 0, node=self.node)

    async def _one(self, payload: UnitPayload) -> Record | None:
        trajectory, category_id, sample, read_cache = payload
        spec = self.job.spec
        assert self._slots is not None
        async with self._slots:
            if self.failure or self.out_of_budget() or self.engine is None:
                return None  # left for the next run, like the local loop's units after a failure or the budget
            category = self.categories[category_id]
            try:
                record = await inject_one(spec.taxonomy, category, trajectory, self.engine, sample=sample,
                                          seed=spec.seed, max_attempts=spec.max_attempts,
                                          output_mode=spec.output_mode, read_cache=read_cache)
                if self.run_dir is not None:
                    self.run_dir.append(record)
            except InjectorError as exc:  # authentication refused, a full disk: stop this worker, and the run
                self.failure = (str(exc), exc.exit_code)
                return None
            except Exception as exc:  # noqa: BLE001 - a bug: reported with where it happened (exit 1), not swallowed
                where = traceback.format_exc(limit=-3).strip().splitlines()
                self.failure = (f"internal error in a Ray worker: {type(exc).__name__}: {exc} ({' | '.join(where)})",
                                1)
                return None
        cost = record.provenance.cost
        self.spent = None if self.spent is None or cost is None else self.spent + cost
        return record
