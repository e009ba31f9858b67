"""The sympy path runs in a separate worker process so one relation never takes more than a bounded time: a
relation that runs past its timeout gets its worker killed and a new one started (no SIGALRM, which works only in
the main thread of the main process and cannot interrupt C code).
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import time
from dataclasses import dataclass
from typing import Any

DEFAULT_TIMEOUT = 3.0
"""Seconds one relation may take on the sympy path (the first call also pays the worker's sympy import)."""
_STARTUP_GRACE = 30.0


@dataclass(frozen=True)
class SympySides:
    """Both sides of a link as the worker evaluated them: 40-digit decimals, and whether they are equal exactly."""

    left: str
    right: str
    equal: bool
    shown_left: str
    shown_right: str


def _serve(connection: multiprocessing.connection.Connection) -> None:
    """The worker's loop: (left, right) -> SympySides | str (why the link is not closed); "cpu" -> CPU seconds."""
    from injector.triage.step_audit.exact import NotClosed, sympy_value

    while True:
        try:
            request = connection.recv()
        except EOFError:
            return
        if request == "cpu":
            connection.send(time.process_time())
            continue
        try:
            connection.send(_sides(request[0], request[1], sympy_value))
        except NotClosed as exc:
            connection.send(str(exc))
        except Exception as exc:  # noqa: BLE001 - sympy failing on a closed side: reported (its type), link unchecked
            connection.send(f"sympy failed ({type(exc).__name__})")


def _sides(left: str, right: str, value_of: Any) -> SympySides:
    import sympy

    left_value, right_value = value_of(left), value_of(right)
    difference = sympy.N(left_value - right_value, 60)
    scale = max(abs(sympy.N(left_value, 60)), abs(sympy.N(right_value, 60)), 1)
    if not difference.is_real:
        raise ValueError("complex")
    equal = bool(abs(difference) <= scale * sympy.Float("1e-45", 60))
    return SympySides(str(sympy.N(left_value, 40)), str(sympy.N(right_value, 40)), equal,
                      sympy.sstr(left_value), sympy.sstr(right_value))


class SympyWorker:
    """One worker process, started on first use and restarted after a timeout."""

    def __init__(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.timeout = timeout
        self._process: Any = None
        self._connection: multiprocessing.connection.Connection | None = None
        self._fresh = False
        self.cpu_seconds_of_dead_workers = 0.0
        self.timeouts = 0

    def _start(self) -> multiprocessing.connection.Connection:
        context = multiprocessing.get_context("spawn")  # no fork: the caller may hold threads and locks
        parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True, name="step-audit-sympy")
        self._process.start()
        child.close()
        self._connection, self._fresh = parent, True
        return parent

    def sides(self, left: str, right: str) -> SympySides | str:
        """Evaluate both sides; a string says why the link cannot be checked (not closed, timeout)."""
        connection = self._connection or self._start()
        limit = self.timeout + (_STARTUP_GRACE if self._fresh else 0.0)
        try:
            connection.send((left, right))
            if not connection.poll(limit):
                self.timeouts += 1
                self._kill()
                return f"timed out after {self.timeout:g} s"
            result: SympySides | str = connection.recv()
        except (EOFError, OSError):  # the worker died (out of memory, killed): this link is unchecked
            self._kill()
            return "the sympy worker died"
        self._fresh = False
        return result

    def cpu_seconds(self) -> float:
        """CPU time spent in workers so far (the running one asked, the killed ones not counted)."""
        if self._connection is None:
            return self.cpu_seconds_of_dead_workers
        self._connection.send("cpu")
        return self.cpu_seconds_of_dead_workers + float(self._connection.recv())

    def _kill(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join(5)
        if self._connection is not None:
            self._connection.close()
        self._process, self._connection = None, None

    def close(self) -> None:
        """Stop the worker (its CPU time is kept in `cpu_seconds_of_dead_workers`)."""
        if self._connection is not None:
            self.cpu_seconds_of_dead_workers = self.cpu_seconds()
        self._kill()
