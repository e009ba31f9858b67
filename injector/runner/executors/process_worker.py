"""The worker side of `inject run --workers N` (see `processes`): a forked process that runs the ordinary run loop
on the units its parent sends through a pipe, and sends back snapshots of its counts, then its outcome."""
from __future__ import annotations

import asyncio
import ctypes
import io
import logging
import os
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any, AsyncIterator, Callable

from injector.engines.base import Engine
from injector.inject.unit import Unit
from injector.records.directory import RunDirectory, WrittenUnits
from injector.runner.budget import BudgetLedger
from injector.runner.local import run_units
from injector.runner.spec import RunProgress, RunSpec
from injector.util.errors import BudgetExceeded, InjectorError

SNAPSHOT_SECONDS = 0.1
"""How often a worker sends its counts (the display redraws no faster)."""
READ_AHEAD = 64
"""Units a worker receives ahead of its run loop."""
PR_SET_PDEATHSIG = 1

log = logging.getLogger("injector")


_inherited: list[Any] = []
"""Objects a worker inherited and must never close (an SQLite connection closed in a fork can corrupt the parent's
database): kept referenced until the worker exits without cleanup."""


def worker_main(index: int, count: int, parent: int, spec: RunSpec, engine: Engine, path: Any,
                units: Connection, results: Connection, ledger: BudgetLedger, written: WrittenUnits) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with(parent)
    _fresh_stdio()
    _own_resources(engine, count)
    progress = RunProgress(retries=lambda: engine.retries)
    last_sent = 0.0

    def on_progress(progress: RunProgress) -> None:
        nonlocal last_sent
        now = time.monotonic()
        if now - last_sent >= SNAPSHOT_SECONDS:
            last_sent = now
            try:
                results.send(("progress", _snapshot(progress)))
            except OSError:  # the parent is gone (and has us stopped, on Linux): the records are what counts
                pass

    outcome: dict[str, Any]
    try:
        asyncio.run(_work(spec, engine, RunDirectory(path), units, progress, on_progress, ledger, written))
        outcome = {"status": "finished"}
    except BudgetExceeded:
        outcome = {"status": "budget"}
    except (asyncio.CancelledError, KeyboardInterrupt):
        outcome = {"status": "interrupted"}
    except InjectorError as exc:
        outcome = {"status": "failed", "error_type": type(exc).__name__, "message": str(exc),
                   "exit_code": exc.exit_code}
    except Exception as exc:  # noqa: BLE001 - a bug: reported (exit 1), its traceback logged
        log.debug("worker %d: %s", index, traceback.format_exc())
        outcome = {"status": "failed", "error_type": type(exc).__name__, "message": str(exc), "exit_code": 1,
                   "internal": True}
    try:
        results.send(("end", {"snapshot": _snapshot(progress), "outcome": outcome}))
    except (BrokenPipeError, OSError):
        pass


async def _work(spec: RunSpec, engine: Engine, run_dir: RunDirectory, units: Connection, progress: RunProgress,
                on_progress: Callable[[RunProgress], None], ledger: BudgetLedger, written: WrittenUnits) -> None:
    """The run loop on the units the parent sends; SIGTERM cancels it between two records."""
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    try:
        await run_units(_received_units(units, spec), spec, engine, run_dir, progress, on_progress, ledger, written)
    finally:
        run_dir.close_files()


async def _received_units(units: Connection, spec: RunSpec) -> AsyncIterator[Unit]:
    """The units the parent sends, until its end marker (or its death). A reader thread receives them a few ahead,
    so waiting for the next unit never holds up the requests in flight; it is a daemon, so a worker stopped while
    it waits on the pipe still exits."""
    categories = {category.id: category for category in spec.categories}
    loop = asyncio.get_running_loop()
    received: asyncio.Queue[Any] = asyncio.Queue()
    room = threading.Semaphore(READ_AHEAD)

    def read() -> None:
        while True:
            room.acquire()
            try:
                message = units.recv()
            except (EOFError, OSError):
                message = None
            try:
                loop.call_soon_threadsafe(received.put_nowait, message)
            except RuntimeError:  # the loop is closed: the worker is stopping
                return
            if message is None:
                return

    threading.Thread(target=read, name="inject-unit-reader", daemon=True).start()
    while (message := await received.get()) is not None:
        room.release()
        trajectory, category_id, sample = message
        yield Unit(trajectory, categories[category_id], sample)


def _die_with(parent: int) -> None:
    """Have the kernel stop this worker when the parent dies (Linux), so no orphan keeps writing the run."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        except (OSError, AttributeError):
            pass
    if os.getppid() != parent:  # it died before the request took effect
        os._exit(1)


def _fresh_stdio() -> None:
    """New stdout and stderr objects: a thread of the parent (its progress display) may have held their locks at
    the fork, and a worker that wrote through them would wait forever."""
    for name, fd in (("stdout", 1), ("stderr", 2)):
        old = getattr(sys, name)
        try:
            new = io.TextIOWrapper(io.FileIO(os.dup(fd), "w"), encoding="utf-8", errors="replace",
                                   line_buffering=True)
        except OSError:
            continue
        _inherited.append(old)
        setattr(sys, name, new)
        for logger in (logging.getLogger(), log):
            for handler in logger.handlers:
                if isinstance(handler, logging.StreamHandler) and handler.stream is old:
                    handler.setStream(new)


def _own_resources(engine: Engine, count: int) -> None:
    """The worker's own share of the rate limits, and its own connection to the request cache."""
    _inherited.extend(engine.take_worker_share(count))


def _snapshot(progress: RunProgress) -> dict[str, Any]:
    return {"done": progress.done, "accepted": progress.accepted, "rejected": progress.rejected,
            "skipped_existing": progress.skipped_existing, "prompt_tokens": progress.prompt_tokens,
            "completion_tokens": progress.completion_tokens, "cost": progress.cost, "codes": dict(progress.codes),
            "by_category": {k: dict(v) for k, v in progress.by_category.items()}, "retries": progress.retries(),
            "transient_message": progress.transient_message, "largest_unit_cost": progress.largest_unit_cost}
