"""The local executor: a run's units on this process's event loop, `concurrency` of them in flight.

Units stream from the source through a bounded queue to the workers, so memory stays flat however large the input;
the first failure (or a reached budget) stops the producer, and a failed write stops everything at once.
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator, Callable, Iterator

from injector.engines.base import Engine, Proposal
from injector.inject.unit import Unit, inject_one
from injector.records.directory import RunDirectory, WrittenUnits
from injector.records.models import Candidate, Rejection
from injector.runner.budget import WAIT, BudgetLedger
from injector.runner.run_log import event
from injector.runner.spec import RunProgress, RunSpec
from injector.util.errors import BudgetExceeded, WriteFailed


LEDGER_POLL_SECONDS = 0.05
"""How often a worker process asks the shared budget again while another's first unit is in flight."""


class _BatchGate(Engine):
    """A batch engine as the run loop sees it: whenever every worker waits on the engine (no further request can
    come until one is answered), the engine is told to send what it has collected (`Engine.flush`)."""

    def __init__(self, engine: Engine, workers: int):
        self.engine, self.live, self.waiting = engine, workers, 0
        self.name, self.takes_feedback = engine.name, engine.takes_feedback

    def describe(self) -> dict[str, Any]:
        return self.engine.describe()

    async def propose(self, messages: list[dict[str, Any]], **request: Any) -> Proposal:
        answer = asyncio.ensure_future(self.engine.propose(messages, **request))
        await asyncio.sleep(0)  # the engine files the request; counted as waiting only once it is filed
        self.waiting += 1
        try:
            await self.flush_if_all_wait()
            return await answer
        finally:
            self.waiting -= 1

    async def worker_done(self) -> None:
        self.live -= 1
        await self.flush_if_all_wait()

    async def flush_if_all_wait(self) -> None:
        if self.live and self.waiting >= self.live:
            await self.engine.flush()


async def run_units(units: Iterator[Unit] | AsyncIterator[Unit], spec: RunSpec, engine: Engine, run_dir: RunDirectory,
                    progress: RunProgress, on_progress: Callable[[RunProgress], None] | None,
                    ledger: BudgetLedger | None = None, written: WrittenUnits | None = None) -> None:
    """The run loop itself, for executors that run it in other processes (`injector.runner.executors.processes`): units may come
    from an async iterator, so waiting for the next one never blocks the requests in flight. `ledger`: the budget
    --max-cost leaves, shared with the other processes of the invocation (default: this loop's own). `written`: what
    the run directory held when the run began, when the caller read it already (worker processes share the
    parent's); else it is read here."""
    await _LocalLoop(spec, engine, run_dir, progress, on_progress, ledger, written).run(units)


async def _unit_stream(units: Iterator[Unit] | AsyncIterator[Unit]) -> AsyncIterator[Unit]:
    if isinstance(units, AsyncIterator):
        async for unit in units:
            yield unit
    else:
        for unit in units:
            yield unit


class _LocalLoop:
    """One invocation's units: a producer fills a bounded queue, `spec.concurrency` workers empty it."""

    def __init__(self, spec: RunSpec, engine: Engine, run_dir: RunDirectory, progress: RunProgress,
                 on_progress: Callable[[RunProgress], None] | None, ledger: BudgetLedger | None = None,
                 written: WrittenUnits | None = None):
        self.spec, self.run_dir, self.progress, self.on_progress = spec, run_dir, progress, on_progress
        self.workers = max(1, spec.concurrency)
        if spec.log_prompts:
            from injector.runner.prompt_log import PromptLog

            engine = PromptLog(engine, run_dir.path)
        self.gate = _BatchGate(engine, spec.concurrency) if engine.collects_batches else None
        self.engine: Engine = self.gate or engine
        self.written: WrittenUnits = run_dir.written() if written is None else written
        self.finished = self.written.finished(spec.retry_rejects)
        self.queue: asyncio.Queue[Unit | None] = asyncio.Queue(maxsize=2 * spec.concurrency)
        self.failures: list[BaseException] = []
        self.write_failed = asyncio.Event()
        self.first_answer = asyncio.Event()
        """Set once the first unit is done: until then one unit goes alone, so that a configuration the provider
        refuses (a mistyped model, a bad key) stops the run after one request, not `concurrency` of them. A batch
        engine sends nothing before every worker waits: it is not held back."""
        if engine.collects_batches:
            self.first_answer.set()
        self.first_taken = False
        self.budget = spec.invocation_budget()
        self.ledger = ledger or BudgetLedger(spec.run_budget_left(), spec.spent_before.largest_unit)
        """What --max-cost leaves, what is spent of it and what the units in flight hold reserved."""
        self.held_back = False
        """Whether a unit was left for a later invocation because the budget had no room for it."""

    def over_budget(self) -> bool:
        """Whether this invocation's budget is spent (`--max-cost-per-invocation`, or what --max-cost leaves)."""
        budget = self.budget
        return budget is not None and self.progress.cost is not None and self.progress.cost >= budget

    async def reserve(self) -> float | None:
        """What one more unit reserves of --max-cost's remainder (`BudgetLedger.reserve`); None: no room. While
        another process's first unit is in flight, wait for its cost (a batch engine sends nothing before every
        worker waits on it: it is not held back)."""
        while (reserved := self.ledger.reserve(first_alone=self.gate is None)) == WAIT:
            await asyncio.sleep(LEDGER_POLL_SECONDS)
        return reserved

    async def run(self, units: Iterator[Unit] | AsyncIterator[Unit]) -> None:
        workers = [asyncio.create_task(self.worker()) for _ in range(self.workers)]
        everything = asyncio.gather(self.produce(units), *workers)
        stop: asyncio.Future[Any] = asyncio.create_task(self.write_failed.wait())
        try:
            await asyncio.wait([everything, stop], return_when=asyncio.FIRST_COMPLETED)
            if everything.done():
                everything.result()  # raises what the producer raised (a bad input line)
        finally:
            # A failed write (or an exception) leaves the units in flight unwritten: a rerun redoes them.
            everything.cancel()
            stop.cancel()
            await asyncio.gather(everything, stop, return_exceptions=True)
        if self.failures:
            raise self.failures[0]
        if self.held_back or self.over_budget():
            raise BudgetExceeded(self.spec.budget_message(self.progress.cost))

    async def produce(self, units: Iterator[Unit] | AsyncIterator[Unit]) -> None:
        async for unit in _unit_stream(units):
            if self.failures or self.over_budget() or self.held_back:
                break
            if unit.id in self.finished:
                self.progress.skipped_existing += 1
                if self.progress.planned is not None:
                    self.progress.planned -= 1
                continue
            await self.queue.put(unit)
        for _ in range(self.workers):
            await self.queue.put(None)

    async def worker(self) -> None:
        try:
            await self.work()
        finally:
            if self.gate is not None:
                await self.gate.worker_done()

    async def work(self) -> None:
        spec = self.spec
        while (unit := await self.queue.get()) is not None:
            if self.first_taken:
                await self.first_answer.wait()
            self.first_taken = True
            reserve = None if self.failures or self.over_budget() else await self.reserve()
            if reserve is None:
                self.held_back = self.held_back or not self.failures
                self.first_answer.set()
                continue  # keep draining so the producer never blocks on a full queue
            record: Candidate | Rejection | None = None
            try:
                record = await inject_one(spec.taxonomy, unit.category, unit.trajectory, self.engine,
                                          sample=unit.sample, seed=spec.seed, max_attempts=spec.max_attempts,
                                          output_mode=spec.output_mode,
                                          read_cache=unit.id not in self.written.rejected)
                record = spec.audited(record)
                self.run_dir.append(record)
            except WriteFailed as exc:  # nothing more can be written: stop now, not after the requests in flight
                self.failures.append(exc)
                self.write_failed.set()
                continue
            except Exception as exc:  # noqa: BLE001 - refused credentials or model, a bug: raised when the run stops
                self.failures.append(exc)
                continue
            finally:
                self.ledger.settle(reserve, None if record is None else record.provenance.cost)
                self.first_answer.set()
            assert record is not None  # every way out of the request without a record continued above
            self.progress.record(record)
            _log_unit(record)
            if self.on_progress:
                self.on_progress(self.progress)


def _log_unit(record: Candidate | Rejection) -> None:
    """One line of the run's log for a finished unit: its outcome, codes and cost."""
    accepted = isinstance(record, Candidate)
    codes = list(record.codes) if isinstance(record, Rejection) else []
    event("unit_done", f"{record.id}: {'accepted' if accepted else 'rejected ' + ', '.join(codes)}", unit=record.id,
          outcome="accepted" if accepted else "rejected", codes=codes, cost=record.provenance.cost)
