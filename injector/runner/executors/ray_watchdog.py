"""The watchdog of a local Ray cluster a run started (`ray.init(address="local")`): ends the cluster's processes when
the run ends, even a run that was SIGKILLed.

Started by the driver right after the cluster, as `python -m injector.runner.executors.ray_watchdog SESSION_DIR`,
with a pipe on its standard input whose other end only the driver holds: end of file means the driver is gone (it
returned, or it died). Until then it notes, every half second, the cluster's processes: those whose command line
names the session directory (GCS, raylet, agents, log monitor) and their descendants (the workers, whose command
lines Ray rewrites). Then it SIGKILLs those still there (the same pid *and* start time), some of which ignore
SIGTERM. A cluster the run only connected to (RAY_ADDRESS) gets no watchdog: nothing the run did not start is
touched.
"""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from injector.runner.executors.ray_driver import start_ticks

WATCH_SECONDS = 0.5
KILL_ROUNDS = 20
"""Sweeps after the driver is gone (half a second apart): a process may start a child while it is being killed."""
STOP_WAIT_SECONDS = 30.0


def processes() -> dict[int, tuple[int, int]]:
    """Every process: pid -> (parent pid, start ticks)."""
    table: dict[int, tuple[int, int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        try:
            table[int(entry.name)] = (int(fields[1]), int(fields[19]))
        except (IndexError, ValueError):
            continue
    return table


def names(pid: int, session_dir: str) -> bool:
    """Whether the command line of `pid` names the session directory."""
    try:
        return session_dir.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def session_processes(session_dir: str, spare: set[int]) -> dict[int, int]:
    """The session's processes now: pid -> start ticks (never those in `spare`)."""
    table = processes()
    found = {pid for pid in table if pid not in spare and names(pid, session_dir)}
    children: dict[int, list[int]] = {}
    for pid, (parent, _) in table.items():
        children.setdefault(parent, []).append(pid)
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found and child not in spare:
                found.add(child)
                todo.append(child)
    return {pid: table[pid][1] for pid in found}


def sweep(session_dir: str, seen: dict[int, int], spare: set[int]) -> int:
    """SIGKILL the session's processes (those seen before and still the same process, and those found now);
    returns how many were signalled."""
    targets = dict(seen)
    targets.update(session_processes(session_dir, spare))
    killed = 0
    for pid, started in targets.items():
        if start_ticks(pid) == started:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
    return killed


def watch(session_dir: str, stdin: IO[bytes]) -> None:
    """Note the session's processes until `stdin` ends, then kill what is left of them."""
    spare = {os.getpid(), os.getppid()}  # the driver, if it is still there (a clean end), is not the cluster's
    seen: dict[int, int] = {}
    fd = stdin.fileno()
    while True:
        seen.update(session_processes(session_dir, spare))
        readable, _, _ = select.select([fd], [], [], WATCH_SECONDS)
        if readable and not os.read(fd, 4096):
            break
    for _ in range(KILL_ROUNDS):
        if not sweep(session_dir, seen, spare):
            return
        time.sleep(WATCH_SECONDS)


class ClusterWatchdog:
    """The driver's side: starts the watchdog of the session and, at `stop`, lets it end what is left."""

    def __init__(self, session_dir: str):
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, session_dir], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, start_new_session=True)  # its own session: a Ctrl-C does not reach it

    @classmethod
    def for_local_ray(cls, ray: object) -> ClusterWatchdog | None:
        """A watchdog of the local session `ray` runs, or None when its session directory cannot be found."""
        node = getattr(getattr(ray, "_private", None), "worker", None)
        node = getattr(node, "_global_node", None)
        session_dir = node.get_session_dir_path() if node is not None else None
        return cls(str(session_dir)) if session_dir else None

    def stop(self) -> None:
        """Close the pipe (the cluster is shut down or the run ends) and wait for the sweep."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=STOP_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            pass


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch(sys.argv[1], sys.stdin.buffer)
