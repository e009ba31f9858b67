"""`inject run --executor ray`: a run's units spread over Ray workers, each running the same `inject_one`.

- The driver (the `inject run` process) reads the input and skips what the run directory holds, as the local loop
  does, and sends every other unit, in small batches, to the worker of its shard (`shards.shard_of`, a stable hash
  of the unit id).
- Each worker is a Ray actor with its own engine, built by `make_engine(workers)` (`WorkerEngine` divides --rpm and
  --tpm by the number of workers) and its share of --concurrency and --max-cost, so the totals hold.
- A worker that sees the driver's run directory (it finds the run lock held: the same machine, or a shared
  filesystem whose locks work) appends its records there itself, through the run directory's multi-writer appends;
  otherwise it returns them and the driver appends them. Either way the ids are the local loop's, so resume (with
  either executor), --retry-rejects, build and review work unchanged, and the driver counts every record for
  progress and the budget.
- A worker that dies (a killed process, a lost node) is replaced, and its unfinished units are sent again, minus the
  ones it wrote before dying; after `worker_restarts` replacements of one shard the run stops (rerun to continue).

Ray is imported only here, and only when a run uses this executor (never at `inject --help`).
"""
from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from injector.engines.base import Engine
from injector.util.errors import BudgetExceeded, InjectorError, UserError
from injector.runner.executors.base import WorkerFailed
from injector.runner.executors.ray_driver import DriverIdentity
from injector.runner.executors.ray_watchdog import ClusterWatchdog
from injector.runner.executors.ray_worker import (BatchResult, Record, ShardWorker, UnitPayload, WorkerEngine,  # noqa: F401
                                                 WorkerJob, sees_run_directory)
from injector.taxonomy.hooks import HOOK_MODULE_PREFIX
from injector.runner.spec import RunProgress, RunSpec
from injector.records.directory import RunDirectory
from injector.records.jsonl import scan_records
from injector.records.models import Candidate, Rejection, unit_id
from injector.runner.shards import shard_of
from injector.inject.unit import Unit

__all__ = ["RayExecutor", "RayRunInfo", "WorkerEngine", "WorkerFailed", "WorkerLost", "connect_ray", "require_ray",
           "sees_run_directory"]

RAY_MISSING = "--executor ray needs Ray, which is not installed: pip install 'prm-injector[ray]'"
BATCHES_IN_FLIGHT = 3
"""Batches sent to one worker and not yet answered: one running, the next ones waiting, so no worker idles while
the driver collects."""
MIN_BATCH = 8
"""Fewest units per batch (a batch is also at least a worker's concurrency): fewer, larger messages to the workers,
and still little to redo when a worker dies."""
KILL_WAITS, KILL_WAIT_SECONDS = 6, 10.0
RAY_NAMESPACE = "prm-injector"
QUIET_RAY: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR}
"""No dashboard, no worker output on the terminal, no info lines from Ray: the run's progress display is the output."""

class WorkerLost(InjectorError):
    """A Ray worker died more often than `worker_restarts` allows; what was written is kept (exit 1)."""


def require_ray() -> None:
    """A one-line `UserError` (exit 2) when Ray is not installed; nothing is imported."""
    if importlib.util.find_spec("ray") is None:
        raise UserError(RAY_MISSING)


def send_loaded_hooks_by_value() -> None:
    """A hook loaded in this process lives in a module imported from the taxonomy's directory under a made-up name
    (`hooks.py`), which a worker cannot import: ship its code with the categories instead of a reference to it."""
    from ray import cloudpickle

    for name, module in list(sys.modules.items()):
        if name.startswith(HOOK_MODULE_PREFIX):
            cloudpickle.register_pickle_by_value(module)


def connect_ray(init_options: dict[str, Any] | None = None) -> tuple[Any, bool]:
    """Ray, initialised: the session already open in this process, else the cluster at RAY_ADDRESS, else a new
    local one (with `init_options`, e.g. num_cpus). Returns (ray, whether this call started the session)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        raise UserError(RAY_MISSING) from None
    if ray.is_initialized():
        return ray, False
    address = os.environ.get("RAY_ADDRESS") or None
    try:
        if address:
            ray.init(address=address, namespace=RAY_NAMESPACE, **QUIET_RAY)
        else:  # address="local": a new local session, never one some earlier `ray start` left running
            ray.init(address="local", namespace=RAY_NAMESPACE, **QUIET_RAY, **(init_options or {}))
    except Exception as exc:  # noqa: BLE001 - Ray raises many kinds; its first line reaches the user (exit 2)
        where = f"the Ray cluster at RAY_ADDRESS={address}" if address else "a local Ray"
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"cannot start or reach {where} ({reason}); check it with `ray status`, or unset "
                        "RAY_ADDRESS to start a local one; run the same command again to continue") from None
    return ray, True


@dataclass
class RayRunInfo:
    """What the last `RayExecutor.run_units` used: for the summary line, and to see a run spread over nodes."""

    workers: int = 0
    token: str = ""
    """Names the run's actors: `inject-TOKEN-SHARD-GENERATION` (in the `prm-injector` namespace)."""
    nodes: set[str] = field(default_factory=set)
    """Ray node ids the workers answered from."""
    restarts: int = 0
    """Dead workers replaced."""

    def describe(self) -> str:
        return (f"ray: {self.workers} worker{'s' * (self.workers != 1)} on {len(self.nodes)} "
                f"node{'s' * (len(self.nodes) != 1)}, {self.restarts} replaced")


@dataclass
class RayExecutor:
    """Runs a run's units on Ray workers (`injector.run(..., executor=RayExecutor(...))`; the CLI's
    `--executor ray`). `make_engine(workers)` builds one worker's engine, with its share of the rate limits
    (`WorkerEngine`); it must describe itself as the run's engine does."""

    make_engine: Callable[[int], Engine]
    workers: int | None = None
    """Ray workers (actors); None: one per CPU of the cluster. Never more than --concurrency."""
    worker_restarts: int = 3
    """Replacements of one shard's worker before the run stops."""
    append_in_workers: bool | None = None
    """Where records are appended: in the workers (True), by the driver (False), or in the workers when they see
    the run directory (None)."""
    init_options: dict[str, Any] = field(default_factory=dict)
    """Extra `ray.init` arguments when a local session is started (e.g. {"num_cpus": 2})."""
    last_run: RayRunInfo = field(default_factory=RayRunInfo)

    def __post_init__(self) -> None:
        require_ray()

    def run_units(self, units: Iterator[Unit], spec: RunSpec, engine: Engine, run_dir: RunDirectory,
                  progress: RunProgress, on_progress: Callable[[RunProgress], None] | None) -> None:
        ray, started = connect_ray(self.init_options)
        # A local cluster this run started ends with it, processes included, even if the driver is SIGKILLed.
        watchdog = ClusterWatchdog.for_local_ray(ray) if started and not os.environ.get("RAY_ADDRESS") else None
        self.last_run = RayRunInfo()
        try:
            _Dispatch(ray, self, spec, engine, run_dir, progress, on_progress).run(units)
        finally:
            if started:
                ray.shutdown()
            if watchdog is not None:
                watchdog.stop()


class _Dispatch:
    """The driver's side of one Ray run: shards, batches, workers, and what comes back."""

    def __init__(self, ray: Any, executor: RayExecutor, spec: RunSpec, engine: Engine, run_dir: RunDirectory,
                 progress: RunProgress, on_progress: Callable[[RunProgress], None] | None):
        self.ray, self.executor, self.spec, self.run_dir = ray, executor, spec, run_dir
        self.progress, self.on_progress = progress, on_progress
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = max(1, min(executor.workers or cpus, spec.concurrency))
        # --concurrency and --max-cost divided so the totals hold; a worker gets at least one unit in flight.
        share, extra = divmod(spec.concurrency, self.workers)
        self.concurrency = [share + (k < extra) for k in range(self.workers)]
        self.batch_size = [max(MIN_BATCH, c) for c in self.concurrency]
        self.budget = None if (budget := spec.invocation_budget()) is None else budget / self.workers
        send_loaded_hooks_by_value()
        manifest = run_dir.read_manifest()
        self.job = WorkerJob(spec=spec, make_engine=executor.make_engine, workers=self.workers, concurrency=1,
                             budget=self.budget, run_path=str(run_dir.path.resolve()),
                             config_hash=str(manifest.config_hash if manifest else None), engine_description=engine.describe(),
                             append=executor.append_in_workers, driver=DriverIdentity.of_this_process(),
                             largest_unit=spec.spent_before.largest_unit)
        # Actors are requested with a CPU share, so a cluster with fewer CPUs than workers still places them all.
        self.actor_class = ray.remote(ShardWorker)
        self.actor_options = dict(num_cpus=min(1.0, cpus / self.workers), max_concurrency=BATCHES_IN_FLIGHT + 1,
                                  scheduling_strategy="SPREAD", namespace=RAY_NAMESPACE)
        self.token = uuid.uuid4().hex[:8]
        self.generation = [0] * self.workers
        self.restarts = [0] * self.workers
        self.actors = [self._new_actor(k) for k in range(self.workers)]
        self.info = executor.last_run
        self.info.workers, self.info.token = self.workers, self.token
        self.retries: dict[tuple[int, int], int] = {}
        progress.retries = lambda: sum(self.retries.values())
        self.pending: dict[Any, tuple[int, int, list[UnitPayload]]] = {}
        """Object ref of a batch -> (shard, worker generation, the batch)."""
        self.in_flight = [0] * self.workers
        self.buffers: list[list[UnitPayload]] = [[] for _ in range(self.workers)]
        self.out_of_budget: set[int] = set()
        self.failure: BaseException | None = None
        # Where this invocation's records begin: a dead worker's records are found after these offsets.
        self.start_offsets = {path: path.stat().st_size if path.exists() else 0
                              for path in (run_dir.candidates_path, run_dir.rejects_path)}

    def _new_actor(self, shard: int) -> Any:
        job = dataclasses.replace(self.job, concurrency=self.concurrency[shard])
        name = f"inject-{self.token}-{shard}-{self.generation[shard]}"
        return self.actor_class.options(name=name, **self.actor_options).remote(job)

    def over_budget(self, *, every_worker: bool = False) -> bool:
        """Whether the run's budget is spent, or a worker's share of it (`every_worker`: every worker's share)."""
        max_cost, cost = self.spec.invocation_budget(), self.progress.cost
        if max_cost is not None and cost is not None and cost >= max_cost:
            return True
        return len(self.out_of_budget) == self.workers if every_worker else bool(self.out_of_budget)

    def run(self, units: Iterator[Unit]) -> None:
        written = self.run_dir.written()
        finished = written.finished(self.spec.retry_rejects)
        try:
            for unit in units:
                if self.failure or self.over_budget(every_worker=True):
                    break
                if unit.id in finished:
                    self.progress.skipped_existing += 1
                    if self.progress.planned is not None:
                        self.progress.planned -= 1
                    continue
                shard = shard_of(unit.id, self.workers)
                if shard in self.out_of_budget:
                    continue  # its worker spent its share: left for the next run
                self.buffers[shard].append((unit.trajectory, unit.category.id, unit.sample,
                                            unit.id not in written.rejected))
                if len(self.buffers[shard]) >= self.batch_size[shard]:
                    self._send(shard)
            for shard in range(self.workers):
                if self.buffers[shard] and not (self.failure or self.over_budget(every_worker=True)
                                                or shard in self.out_of_budget):
                    self._send(shard)
            while self.pending:
                self._collect()
        finally:
            for actor in self.actors:
                self.ray.kill(actor)
        if self.failure:
            raise self.failure
        if self.over_budget():
            raise BudgetExceeded(self.spec.budget_message(self.progress.cost))

    def _send(self, shard: int) -> None:
        """Send the shard's buffer to its worker, once the worker has room."""
        while self.in_flight[shard] >= BATCHES_IN_FLIGHT and not self.failure:
            self._collect()
        batch, self.buffers[shard] = self.buffers[shard], []
        if not self.failure:
            self._submit(shard, batch)

    def _submit(self, shard: int, batch: list[UnitPayload]) -> None:
        ref = self.actors[shard].process.remote(batch)
        self.pending[ref] = (shard, self.generation[shard], batch)
        self.in_flight[shard] += 1

    def _collect(self) -> None:
        """Wait for one batch, and write and count what it brings."""
        ray = self.ray
        (ref,), _ = ray.wait(list(self.pending), num_returns=1)
        shard, generation, batch = self.pending.pop(ref)
        self.in_flight[shard] -= 1
        try:
            result: BatchResult = ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            self._worker_died(shard, generation, batch, exc)
            return
        except ray.exceptions.RayError as exc:  # the task itself failed outside a unit: a bug
            self.failure = WorkerFailed(f"a Ray worker failed: {str(exc).splitlines()[0]}", 1)
            return
        self.retries[shard, generation] = result.retries
        self.info.nodes.add(result.node)
        for record in result.records:
            self._count(record, append=not result.appended)
        if result.budget_reached:
            self.out_of_budget.add(shard)
        if result.failure and not self.failure:
            self.failure = WorkerFailed(*result.failure)

    def _count(self, record: Record, *, append: bool) -> None:
        if append:
            self.run_dir.append(record)  # a WriteFailed here stops the run, as in the local loop
        self.progress.record(record)
        if self.on_progress:
            self.on_progress(self.progress)

    def _worker_died(self, shard: int, generation: int, batch: list[UnitPayload], cause: Exception) -> None:
        """Replace the shard's dead worker (once per death) and send the batch again, minus the units the dead
        worker wrote before it died."""
        if self.failure:
            return
        if generation == self.generation[shard]:
            self.restarts[shard] += 1
            if self.restarts[shard] > self.executor.worker_restarts:
                reason = str(cause).strip().splitlines()[0] if str(cause).strip() else type(cause).__name__
                self.failure = WorkerLost(
                    f"the Ray worker of shard {shard} died {self.restarts[shard]} times (last: {reason}); what was "
                    "written is kept: run the same command again to continue")
                return
            self._kill(self.actors[shard])
            self.info.restarts += 1
            self.generation[shard] += 1
            self.actors[shard] = self._new_actor(shard)
        ids = {unit_id(trajectory.id, category_id, sample) for trajectory, category_id, sample, _ in batch}
        for record in self._written_since_start(ids):
            self._count(record, append=False)
            ids.discard(record.id)
        rest = [payload for payload in batch if unit_id(payload[0].id, payload[1], payload[2]) in ids]
        if rest:
            self._submit(shard, rest)

    def _kill(self, actor: Any) -> None:
        """Kill a worker and wait (a minute at most) until it is gone: `ray.kill` only asks, and a worker that is
        merely unreachable must not append after the run directory is read for what it wrote."""
        ray = self.ray
        ray.kill(actor)
        for _ in range(KILL_WAITS):
            try:
                ray.get(actor.pid.remote(), timeout=KILL_WAIT_SECONDS)
            except ray.exceptions.ActorDiedError:
                return
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                continue

    def _written_since_start(self, ids: set[str]) -> Iterator[Record]:
        """Records of units `ids` written by this invocation (after the offsets it started at)."""
        start = self.start_offsets
        candidates, rejects = self.run_dir.candidates_path, self.run_dir.rejects_path
        if candidates.exists():
            yield from (record for _, offset, record in scan_records(candidates, Candidate)
                        if offset >= start[candidates] and record.id in ids)
        if rejects.exists():
            yield from (record for _, offset, record in scan_records(rejects, Rejection)
                        if offset >= start[rejects] and record.id in ids)

