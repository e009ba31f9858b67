"""The worker side of `inject run --executor ray` (see `ray_actors`): a Ray actor with its own engine that runs the
units it is sent with `inject_one`, and appends its records itself when it sees the driver's run directory."""
from __future__ import annotations

import asyncio
import os
import threading
import time
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
from injector.runner.executors.ray_driver import DriverIdentity, driver_holds_run, sees_run_directory
from injector.runner.spec import RunSpec
from injector.util.errors import InjectorError, UserError


UnitPayload = tuple[Trajectory, str, int, bool]
"""What the driver sends a worker for one unit: the trajectory, the category id, the sample, and whether to read
the request cache (not for a rejected unit tried again: its cached answers are the ones that failed)."""

Record = Candidate | Rejection
DRIVER_WATCH_SECONDS = 0.5
"""How often a worker on the driver's machine checks that the driver lives (between its checks before writes)."""
DRIVER_GONE = "the run's driver is gone (it no longer holds the run directory); this worker stopped"


def exit_when_driver_dies(driver: DriverIdentity) -> None:
    """Poll the driver's process and end this worker's process once it is dead: a dead driver's worker would only
    spend requests on records it may no longer write."""
    while driver.alive() is not False:
        time.sleep(DRIVER_WATCH_SECONDS)
    os._exit(1)


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


@dataclass
class WorkerJob:
    """Everything one worker needs, sent once when it starts."""

    spec: RunSpec
    make_engine: Callable[[int], Engine]
    workers: int
    concurrency: int
    budget: float | None
    """Dollars this worker may spend (its share of the invocation's budget), or None for no limit: it starts a unit
    only while its share can hold it, the largest unit so far reserved for each unit in flight."""
    run_path: str
    config_hash: str
    engine_description: dict[str, Any]
    """The driver's `engine.describe()`: a worker whose engine differs would write records of another run."""
    append: bool | None = None
    """Append records in the worker (True), return them to the driver (False), or decide by `sees_run_directory`."""
    driver: DriverIdentity | None = None
    """The driver process: a worker stops (appends nothing more, and exits) once it is known dead."""
    largest_unit: float = 0.0
    """The most one unit of the run directory has cost so far (its manifest's `spending`): reserved per unit."""


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
        self.largest, self.reserved = job.largest_unit, 0.0
        """The largest unit's cost so far, and what the units in flight hold reserved of the budget."""
        self.held_back = False
        """A unit was left for a later invocation: the budget had no room for it."""
        self._first_started = False
        self._first_done = asyncio.Event()
        """Set once a unit ended: until a unit's cost is known, one goes alone under a budget."""

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
        if job.driver is not None and job.driver.alive() is not None:
            threading.Thread(target=exit_when_driver_dies, args=(job.driver,), daemon=True,
                             name="driver-watch").start()

    def out_of_budget(self) -> bool:
        budget = self.job.budget
        return budget is not None and (self.held_back or (self.spent is not None and self.spent >= budget))

    async def _room_for_a_unit(self) -> bool:
        """Whether one more unit may start under the budget: what is spent, what the units in flight hold and the
        largest unit so far (reserved for it) stay within it. While no unit's cost is known, the first goes alone
        (a worker that started `concurrency` units at once before any price was known could pass its share)."""
        budget = self.job.budget
        if budget is None:
            return True
        if self._first_started and not self.largest:
            await self._first_done.wait()
        self._first_started = True
        return self.spent is not None and self.spent + self.reserved + self.largest <= budget

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
            if not await self._room_for_a_unit():
                self.held_back = True
                return None
            category = self.categories[category_id]
            reserve = self.largest
            self.reserved += reserve
            try:
                record = await inject_one(spec.taxonomy, category, trajectory, self.engine, sample=sample,
                                          seed=spec.seed, max_attempts=spec.max_attempts,
                                          output_mode=spec.output_mode, read_cache=read_cache)
                record = spec.audited(record)
                if self.run_dir is not None:
                    if not driver_holds_run(self.run_dir.path, self.job.driver, lock_required=self.job.append is None):
                        # The driver is gone (a resume may hold the directory now): write nothing more.
                        self.failure = (DRIVER_GONE, 1)
                        return None
                    self.run_dir.append(record)
            except InjectorError as exc:  # authentication refused, a full disk: stop this worker, and the run
                self.failure = (str(exc), exc.exit_code)
                return None
            except Exception as exc:  # noqa: BLE001 - a bug: reported with where it happened (exit 1), not swallowed
                where = traceback.format_exc(limit=-3).strip().splitlines()
                self.failure = (f"internal error in a Ray worker: {type(exc).__name__}: {exc} ({' | '.join(where)})",
                                1)
                return None
            finally:
                self.reserved -= reserve
                self._first_done.set()
        cost = record.provenance.cost
        self.spent = None if self.spent is None or cost is None else self.spent + cost
        self.largest = max(self.largest, cost or 0.0)
        return record
