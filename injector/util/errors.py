"""Errors the library raises, each with the exit code the CLI maps it to (see README, "Exit codes").

Every exception class of the toolkit derives from `InjectorError`; the ones that end a unit instead of the run
(an engine's `ProviderError`, `TransientProviderError`, `NotApplicable`, the contract's `AnswerError`) carry their
`ReasonCode` and are turned into a reject before they could reach the CLI.
"""
from __future__ import annotations

from pathlib import Path


class InjectorError(Exception):
    """Base class; `exit_code` is what `inject` exits with when this reaches the CLI."""

    exit_code = 1


class UserError(InjectorError):
    """Something the user must fix: usage, configuration, a missing key, bad input (exit 2)."""

    exit_code = 2


class InputError(UserError):
    """A bad input record, reported as `FILE:LINE: what is wrong`."""

    def __init__(self, path: str | Path, line: int | None, message: str):
        self.path, self.line, self.message = str(path), line, message
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {message}")


class AuthenticationRefused(UserError):
    """The provider refused the credentials (401/403): the run stops at once."""


class BudgetExceeded(InjectorError):
    """A budget stopped the run; running the same command again resumes it (exit 3)."""

    exit_code = 3


class WriteFailed(UserError):
    """A file could not be written (full disk, read-only file system, no permission): exit 2, nothing half-written."""

    def __init__(self, path: object, reason: object, hint: str = "free space or fix the permissions, then run the "
                 "same command again to continue"):
        self.path = str(path)
        reason = getattr(reason, "strerror", None) or str(reason)
        super().__init__(f"cannot write {self.path}: {reason}; {hint}")


class AuditFailed(InjectorError):
    """`inject audit`: at least one record fails the audit (exit 4, so a pipeline can gate on it)."""

    exit_code = 4


class ProviderUnreachable(InjectorError):
    """`inject run`: no unit produced a candidate and some failed transiently, e.g. no network (exit 5); running
    the same command again retries them."""

    exit_code = 5


class BatchesPending(InjectorError):
    """`inject run --batch --no-wait`: batches are submitted (or still running) and nothing more can be collected
    now; running the same command again polls and collects them (exit 0: nothing went wrong)."""

    exit_code = 0


class ProviderMisconfigured(UserError):
    """The provider refused the run's configuration (an unknown model or provider, a context window that no prompt
    fits): every unit would fail the same way, so the run stops at the first answer that shows it (exit 2)."""


class NothingMeasured(InjectorError):
    """`inject eval --judge`, `inject verify`: every answer was invalid, so there is no figure to report (exit 5)."""

    exit_code = 5
