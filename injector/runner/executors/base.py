"""What the executors share: a worker's share of a run-wide limit, and the error that stops a run when a worker
fails or dies."""
from __future__ import annotations

from injector.util.errors import InjectorError


def shares(total: int, count: int) -> list[int]:
    """`total` split into `count` whole shares that differ by at most one and add up to `total`."""
    base, extra = divmod(total, count)
    return [base + (k < extra) for k in range(count)]


class WorkerFailed(InjectorError):
    """A worker (a process, a Ray actor) stopped with an error, or died; what was written is kept, and the same
    command continues. Carries the worker's exit code (its error's, or 1 when it died)."""

    def __init__(self, message: str, exit_code: int = 1):
        super().__init__(message)
        self.exit_code = exit_code
