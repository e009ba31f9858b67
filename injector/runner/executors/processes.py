"""`inject run --workers N`: a run's units spread over N worker processes on this machine, to use every core.

Validation is CPU-bound, and math-verify's timeout works only in a process's main thread, so the workers are
processes (forked, so they inherit the engine, the taxonomy and its hooks as built), not threads.

- The parent (the `inject run` process) reads the input once, as the local loop does, and sends each unit to the
  worker of its trajectory's shard (`shards.shard_of`, a stable hash; by trajectory, so the units of one trajectory
  share one worker's caches) through a pipe; a worker pulls units without ever blocking its requests in flight,
  and runs the ordinary run loop (`runner.local.run_units`; the worker side is `process_worker`) on them.
- Each worker appends its own records to the run directory, through its multi-writer appends (a lock per file,
  whole lines), and skips what the directory already holds, so resume, the kill test and the ids are those of
  `--workers 1`.
- Limits hold in total: worker k gets its share of --concurrency (the shares differ by at most one and add up to
  it), 1/N of --rpm and --tpm (each worker has its own rate limiter; a run-wide pause after a burst of 429s
  pauses the worker that saw them) and 1/N of --max-cost-per-invocation; what --max-cost leaves is one ledger in
  shared memory (`runner.budget`) every worker reserves from before it starts a unit, so the total never exceeds
  the run's cap (until one unit's cost is known, the first unit of the invocation goes alone).
- Workers send a snapshot of their counts at most every `SNAPSHOT_SECONDS`; the parent adds them up for the one
  progress display and the summary.
- Ctrl-C reaches the parent only (the workers ignore SIGINT); it stops the workers with SIGTERM, which cancels
  their requests in flight between two records, then the run ends as interrupted (exit 130). A worker that dies
  stops the others; the parent's death stops the workers (Linux: PR_SET_PDEATHSIG). Either way what was written
  stays, and the same command continues.
"""
from __future__ import annotations

import fcntl
import gc
import multiprocessing
import os
import signal
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterator

from injector.engines.base import Engine
from injector.inject.unit import Unit
from injector.records.directory import RunDirectory, WrittenUnits
from injector.records.models import Spending
from injector.runner.budget import BudgetLedger
from injector.runner.executors.base import WorkerFailed, shares
from injector.runner.executors.process_worker import worker_main
from injector.runner.shards import shard_of
from injector.runner.spec import RunProgress, RunSpec
from injector.util.errors import BudgetExceeded, ProviderUnreachable, UserError

__all__ = ["WorkerFailed", "WorkerProcesses", "shares"]

STOP_GRACE_SECONDS = 30.0
"""How long a stopped worker may take to cancel its requests and exit before it is killed."""
PIPE_BYTES = 1 << 20
EXIT_RESUMABLE = ProviderUnreachable.exit_code
"""A worker that died (killed, out of memory) or was stopped from outside: a failure the same command recovers from,
as a provider outage is (exit 5); not a bug (exit 1)."""
"""Pipe buffer asked for (Linux): room for a few hundred units queued for a worker."""


@dataclass
class _Worker:
    index: int
    process: Any
    results: Connection
    """Worker -> parent: progress snapshots, then its outcome."""
    units: Connection
    """Parent -> worker: (trajectory, category id, sample) per unit, then None."""
    snapshot: dict[str, Any] = field(default_factory=dict)
    outcome: dict[str, Any] | None = None
    feeding: bool = True
    """False once the worker stopped taking units (it finished, failed, or reached its budget)."""


class WorkerProcesses:
    """Run a run's units in `count` forked worker processes (see the module's docstring); an `UnitExecutor`."""

    def __init__(self, count: int):
        if count < 1:
            raise UserError(f"--workers must be at least 1, not {count}")
        if "fork" not in multiprocessing.get_all_start_methods():
            raise UserError("--workers needs a system that can fork processes (Linux, macOS); use --workers 1")
        self.count = count
        self.skipped = 0
        """Units the parent skipped as already written (this invocation)."""

    def run_units(self, units: Iterator[Unit], spec: RunSpec, engine: Engine, run_dir: RunDirectory,
                  progress: RunProgress, on_progress: Callable[[RunProgress], None] | None) -> None:
        if spec.concurrency < self.count:
            raise UserError(f"--workers {self.count} needs --concurrency {self.count} or more (each worker keeps at "
                            "least one request in flight)")
        written = run_dir.written()  # read once, here: the forked workers share it
        self.skipped = 0
        run_dir.close_files()  # a worker must open its own descriptors: a shared one would share its locks too
        planned = progress.planned
        # Objects alive now are left out of the workers' garbage collections, which would otherwise write to (and
        # so copy) every page they inherited.
        gc.freeze()
        try:
            ledger = BudgetLedger(spec.run_budget_left(), spec.spent_before.largest_unit, shared=True)
            workers = [self._start(k, spec, engine, run_dir, ledger, written) for k in range(self.count)]
        finally:
            gc.unfreeze()
        progress.retries = lambda: sum(w.snapshot.get("retries", 0) for w in workers)
        finished = written.finished(spec.retry_rejects)
        feeder = _Feeder((unit for unit in units if not self._skipped(unit.id in finished)), workers)
        interrupted = False
        try:
            feeder.start()
            self._collect(workers, progress, planned, on_progress)
        except KeyboardInterrupt:
            interrupted = True
            self._stop(workers)
            self._collect_quietly(workers, progress, planned, on_progress)
        finally:
            feeder.stop()
            for worker in workers:
                worker.process.join(timeout=STOP_GRACE_SECONDS)
                if worker.process.is_alive():
                    worker.process.kill()
                    worker.process.join()
                worker.results.close()
        if interrupted:
            raise KeyboardInterrupt
        if feeder.failure is not None:
            raise feeder.failure
        self._raise_outcome(workers, spec, progress)

    # ------------------------------------------------------------------------------------------ parent side

    def _skipped(self, done: bool) -> bool:
        """Count a unit the run directory already holds: the parent skips it (a worker would only receive it to
        skip it), and adds these to the workers' counts."""
        self.skipped += done
        return done

    def _start(self, index: int, spec: RunSpec, engine: Engine, run_dir: RunDirectory, ledger: BudgetLedger,
               written: WrittenUnits) -> _Worker:
        context = multiprocessing.get_context("fork")
        results_in, results_out = context.Pipe(duplex=False)
        units_in, units_out = context.Pipe(duplex=False)
        _widen(units_out)
        per_invocation = spec.max_cost_per_invocation
        share = spec.model_copy(update={
            "concurrency": shares(spec.concurrency, self.count)[index],
            # What --max-cost leaves is the shared ledger's (every worker reserves from it); each worker stops on
            # reaching its share of --max-cost-per-invocation.
            "max_cost": None, "spent_before": Spending(),
            "max_cost_per_invocation": None if per_invocation is None else per_invocation / self.count})
        process = context.Process(target=worker_main, name=f"inject-worker-{index}", daemon=True,
                                  args=(index, self.count, os.getpid(), share, engine, run_dir.path, units_in,
                                        results_out, ledger, written))
        # SIGINT is blocked across the fork, so a Ctrl-C cannot reach the worker before it ignores SIGINT.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            process.start()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        results_out.close()  # so the parent sees end-of-file when the worker is gone
        units_in.close()
        return _Worker(index, process, results_in, units_out)

    def _collect(self, workers: list[_Worker], progress: RunProgress, planned: int | None,
                 on_progress: Callable[[RunProgress], None] | None) -> None:
        """Read every worker's messages until all are gone; a failed or dead worker stops the others."""
        live = {worker.results: worker for worker in workers}
        stopping = False
        while live:
            for connection in wait(list(live)):
                worker = live[connection]  # type: ignore[index]
                try:
                    kind, payload = worker.results.recv()
                except (EOFError, OSError):
                    del live[connection]  # type: ignore[arg-type]
                    worker.feeding = False
                    if worker.outcome is None:
                        worker.process.join(timeout=STOP_GRACE_SECONDS)
                        worker.outcome = {"status": "died", "exitcode": worker.process.exitcode}
                    if worker.outcome["status"] in ("failed", "died") and not stopping:
                        stopping = True
                        self._stop(workers)
                    continue
                if kind == "end":
                    worker.snapshot, worker.outcome = payload["snapshot"], payload["outcome"]
                    worker.feeding = False
                else:
                    worker.snapshot = payload
                _merge(progress, planned, workers, self.skipped)
                if on_progress:
                    on_progress(progress)

    def _collect_quietly(self, workers: list[_Worker], progress: RunProgress, planned: int | None,
                         on_progress: Callable[[RunProgress], None] | None) -> None:
        """After Ctrl-C: take the workers' last counts while they stop; a second Ctrl-C kills them."""
        try:
            self._collect(workers, progress, planned, on_progress)
        except KeyboardInterrupt:
            for worker in workers:
                if worker.process.is_alive():
                    worker.process.kill()

    @staticmethod
    def _stop(workers: list[_Worker]) -> None:
        for worker in workers:
            worker.feeding = False
            if worker.process.is_alive():
                try:
                    os.kill(worker.process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass

    def _raise_outcome(self, workers: list[_Worker], spec: RunSpec, progress: RunProgress) -> None:
        outcomes = [(worker.index, worker.outcome or {"status": "died", "exitcode": worker.process.exitcode})
                    for worker in workers]
        for index, outcome in outcomes:
            if outcome["status"] == "failed":
                error_type = outcome["error_type"]
                where = f"worker {index + 1} of {self.count}"
                if outcome.get("internal"):
                    raise WorkerFailed(f"{where}: internal error: {error_type}: {outcome['message']}")
                raise WorkerFailed(outcome["message"], outcome["exit_code"])
        for index, outcome in outcomes:
            if outcome["status"] == "died":
                how = _death(outcome.get("exitcode"))
                raise WorkerFailed(f"worker {index + 1} of {self.count} {how}; nothing written is lost: run the same "
                                   "command again to continue", EXIT_RESUMABLE)
            if outcome["status"] == "interrupted":  # stopped from outside (a SIGTERM not sent by us)
                raise WorkerFailed(f"worker {index + 1} of {self.count} was stopped; nothing written is lost: run "
                                   "the same command again to continue", EXIT_RESUMABLE)
        if any(outcome["status"] == "budget" for _, outcome in outcomes):
            raise BudgetExceeded(f"{spec.budget_message(progress.cost)} (the {self.count} workers share the budget)")


class _Feeder(threading.Thread):
    """Reads the units (the input, once) and sends each to the worker of its shard; the parent's only reader."""

    def __init__(self, units: Iterator[Unit], workers: list[_Worker]):
        super().__init__(name="inject-unit-feeder", daemon=True)
        self.units, self.workers = units, workers
        self.failure: BaseException | None = None
        self._stopping = False

    def run(self) -> None:
        try:
            for unit in self.units:
                if self._stopping:
                    break
                # By trajectory: all units of one trajectory go to one worker, whose caches (the parsed answers)
                # then serve every category and sample of it, as in one process.
                worker = self.workers[shard_of(unit.trajectory.id, len(self.workers))]
                if worker.feeding:
                    self._send(worker, (unit.trajectory, unit.category.id, unit.sample))
                if not any(w.feeding for w in self.workers):
                    break  # every worker stopped (budgets, failures): reading on would only count records
        except Exception as exc:  # noqa: BLE001 - kept and raised by the parent: the run stops, as the local loop would
            self.failure = exc
            WorkerProcesses._stop(self.workers)
        finally:
            for worker in self.workers:
                if worker.feeding:
                    self._send(worker, None)
                worker.units.close()

    @staticmethod
    def _send(worker: _Worker, message: Any) -> None:
        try:
            worker.units.send(message)
        except (BrokenPipeError, OSError):  # the worker is gone; the parent learns why from its results pipe
            worker.feeding = False

    def stop(self) -> None:
        self._stopping = True
        self.join(timeout=STOP_GRACE_SECONDS)


def _merge(progress: RunProgress, planned: int | None, workers: list[_Worker], skipped: int) -> None:
    """The run's progress: the sum of the workers' latest snapshots, and the units the parent skipped."""
    snapshots = [w.snapshot for w in workers if w.snapshot]
    for name in ("done", "accepted", "rejected", "skipped_existing", "prompt_tokens", "completion_tokens"):
        setattr(progress, name, sum(s[name] for s in snapshots))
    progress.skipped_existing += skipped
    costs = [s["cost"] for s in snapshots]
    progress.cost = None if any(cost is None for cost in costs) else sum(costs)
    # The manifest keeps it: the next invocation reserves it for each unit it starts under --max-cost.
    progress.largest_unit_cost = max((s["largest_unit_cost"] for s in snapshots), default=0.0)
    progress.codes, progress.by_category = {}, {}
    for snapshot in snapshots:
        for code, count in snapshot["codes"].items():
            progress.codes[code] = progress.codes.get(code, 0) + count
        for category, counts in snapshot["by_category"].items():
            mine = progress.by_category.setdefault(category, {"accepted": 0, "rejected": 0})
            for outcome, count in counts.items():
                mine[outcome] = mine.get(outcome, 0) + count
        if snapshot["transient_message"]:
            progress.transient_message = snapshot["transient_message"]
    if planned is not None:
        progress.planned = planned - progress.skipped_existing


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            return f"was killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"was killed by signal {-exitcode}"
    return f"exited unexpectedly (exit code {exitcode})"


def _widen(connection: Connection) -> None:
    """Ask for a larger pipe buffer (Linux), so a worker has units queued while the parent reads on."""
    set_pipe_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_pipe_size is None:
        return
    try:
        fcntl.fcntl(connection.fileno(), set_pipe_size, PIPE_BYTES)
    except OSError:  # above /proc/sys/fs/pipe-max-size: the default size works too, with less read-ahead
        pass
