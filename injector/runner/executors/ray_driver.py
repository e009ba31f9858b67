"""Whether the driver of a Ray run (the `inject run` process) is still there, seen from one of its workers.

A worker appends to the run directory only while the driver holds it: the run lock is held (`sees_run_directory`)
*and*, on the driver's machine, the driver's own process is alive (its pid with the start time it had, so a reused
pid is not mistaken for it). The lock alone is not enough: once the driver is SIGKILLed, a resume may take the lock
again while the dead driver's workers are still running. On another machine (a shared filesystem) the process
cannot be seen, and the lock is all there is (see docs/known-limits.md).
"""
from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path


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


BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str:
    """This machine's boot id (Linux), or "" where there is none: then no process is checked."""
    try:
        return BOOT_ID.read_text(encoding="ascii").strip()
    except OSError:
        return ""


def start_ticks(pid: int) -> int | None:
    """When process `pid` started (clock ticks since boot, /proc/PID/stat field 22), or None if there is no such
    process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields are counted after its closing one.
    fields = stat[stat.rfind(b")") + 2:].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True)
class DriverIdentity:
    """The driver process, as its workers can recognise it: machine (boot id), pid and start time."""

    boot: str
    pid: int
    started: int | None

    @classmethod
    def of_this_process(cls) -> DriverIdentity:
        return cls(boot=boot_id(), pid=os.getpid(), started=start_ticks(os.getpid()))

    def alive(self) -> bool | None:
        """True or False on the driver's machine; None elsewhere (or without /proc): it cannot be told."""
        if not self.boot or self.started is None or self.boot != boot_id():
            return None
        return start_ticks(self.pid) == self.started


def driver_holds_run(path: Path, driver: DriverIdentity | None, *, lock_required: bool = True) -> bool:
    """Whether a worker may still append to the run directory `path`: the driver is not known to be dead, and the
    run lock is held (unless `lock_required` is off: workers told to append whatever the lock says)."""
    if driver is not None and driver.alive() is False:
        return False
    return not lock_required or sees_run_directory(path)
