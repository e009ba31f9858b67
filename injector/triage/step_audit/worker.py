"""The sympy path runs in a separate worker process so one relation never takes more than a bounded time: a
relation that runs past its timeout gets its worker killed and a new one started (no SIGALRM, which works only in
the main thread of the main process and cannot interrupt C code).

Each process auditing owns its worker: an `inject run --workers N` worker process is daemonic, which multiprocessing
forbids children, so there the worker is a plain subprocess on a socket pair, the same loop, ending with its parent.
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
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


def serve_descriptor(descriptor: int) -> None:
    """The worker's loop when started as a plain subprocess: on its end of a socket pair; it exits when its parent
    is gone, so a killed run worker leaves no sympy process computing behind it."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="step-audit-parent-watch", daemon=True).start()
    _serve(multiprocessing.connection.Connection(descriptor))


_SUBPROCESS = "import sys; from injector.triage.step_audit.worker import serve_descriptor; serve_descriptor(int(sys.argv[1]))"
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[3])


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
        self._owner = 0
        """The process that started the worker: a forked child (a run worker) starts its own, never shares it."""

    def _start(self) -> multiprocessing.connection.Connection:
        self._owner = os.getpid()
        if multiprocessing.current_process().daemon:
            return self._start_subprocess()
        context = multiprocessing.get_context("spawn")  # no fork: the caller may hold threads and locks
        parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True, name="step-audit-sympy")
        self._process.start()
        child.close()
        self._connection, self._fresh = parent, True
        return parent

    def _start_subprocess(self) -> multiprocessing.connection.Connection:
        """The worker as a plain subprocess (a daemonic process may not start multiprocessing children)."""
        ours, theirs = socket.socketpair()
        path = os.pathsep.join(filter(None, [_PACKAGE_ROOT, os.environ.get("PYTHONPATH")]))
        with theirs:
            self._process = subprocess.Popen([sys.executable, "-c", _SUBPROCESS, str(theirs.fileno())],
                                             pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                             stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": path})
        self._connection, self._fresh = multiprocessing.connection.Connection(ours.detach()), True
        return self._connection

    def sides(self, left: str, right: str) -> SympySides | str:
        """Evaluate both sides; a string says why the link cannot be checked (not closed, timeout, no worker)."""
        if self._connection is not None and self._owner != os.getpid():
            self._process, self._connection = None, None  # inherited through a fork: the parent's, left to it
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
            self._process.wait(5) if isinstance(self._process, subprocess.Popen) else self._process.join(5)
        if self._connection is not None:
            self._connection.close()
        self._process, self._connection = None, None

    def close(self) -> None:
        """Stop the worker (its CPU time is kept in `cpu_seconds_of_dead_workers`)."""
        if self._connection is not None:
            self.cpu_seconds_of_dead_workers = self.cpu_seconds()
        self._kill()
