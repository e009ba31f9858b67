"""`<out>/log.jsonl`: what a command did, one JSON object a line (`time`, `level`, `event`, `unit`, `message` and
the event's fields), appended over the directory's invocations. It is the `injector` logger's output while a run
holds the directory (and while `verify`, `build` or `eval` write theirs: `command_log`), so the toolkit's warnings
land there too; `--verbose` also shows it on the terminal. Every line passes the redaction the terminal does (no
key in a log)."""
from __future__ import annotations

import json
import logging
import sys
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from injector.util.redaction import RedactingFilter, redact

LOG_FILE = "log.jsonl"
log = logging.getLogger("injector.run")
_RESERVED = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonLinesHandler(logging.Handler):
    """Appends each log record to a file as one JSON line; a record's `extra` fields become the line's fields."""

    def __init__(self, path: Path, deferred: bool = False):
        super().__init__(logging.INFO)
        self.path = path
        self.failed = False
        self.pending: list[str] | None = [] if deferred else None
        """Lines held until `write_pending` (a directory that does not exist yet, or is about to be replaced)."""
        self.addFilter(RedactingFilter())

    def emit(self, record: logging.LogRecord) -> None:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "event": getattr(record, "event", "message"),
            "unit": getattr(record, "unit", None),
            "message": record.getMessage(),
        }
        line.update({key: value for key, value in vars(record).items()
                     if key not in _RESERVED and key not in line})
        text = redact(json.dumps(line, ensure_ascii=False, default=str)) + "\n"
        if self.pending is not None:
            self.pending.append(text)
            return
        self._append(text)

    def _append(self, text: str) -> None:
        from injector.util.errors import UserError
        from injector.util.safe_files import open_append

        if self.failed:
            return
        try:
            with open_append(self.path) as handle:  # one write per line: appends stay whole; no link followed
                handle.write(text.encode("utf-8"))
        except (OSError, UserError) as exc:  # a log that cannot be written must not stop the command: say so once
            self.failed = True
            sys.stderr.write(redact(f"warning: {self.path}: the log is not written ({exc})\n"))

    def write_pending(self) -> None:
        """Append the held lines, if the directory exists by now (a command that wrote nothing leaves no log)."""
        lines, self.pending = self.pending or [], None
        if lines and self.path.parent.is_dir():
            self._append("".join(lines))


@contextmanager
def run_log(run_dir: Path, deferred: bool = False) -> Iterator[JsonLinesHandler]:
    """Write the `injector` logger's records of INFO and above to `run_dir/log.jsonl` for the duration (`deferred`:
    at the end, for a directory written at the end)."""
    handler = JsonLinesHandler(Path(run_dir) / LOG_FILE, deferred=deferred)
    logger = logging.getLogger("injector")
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.write_pending()


@contextmanager
def command_log(directory: Path | str, command: str, deferred: bool = False, **fields: Any) -> Iterator[None]:
    """`run_log` for `verify`, `build` and `eval`: `<command>_started` (with `fields`), then `<command>_finished`
    or `<command>_stopped` (the exception) in `directory/log.jsonl`. Only a directory that exists gets a log (a
    deferred one: by the end, and only when the command finished: `build` replaces its directory, and a refused
    build must not touch the split already there); the caller logs its own figures before the block ends."""
    directory = Path(directory)
    with run_log(directory, deferred=deferred or not directory.is_dir()) as handler:
        event(f"{command}_started", f"{command} started: {directory}", **fields)
        try:
            yield
        except BaseException as exc:
            event(f"{command}_stopped", f"{command} stopped: {type(exc).__name__}: {exc}", error=type(exc).__name__)
            if deferred:
                handler.pending = None
            raise
        event(f"{command}_finished", f"{command} finished: {directory}")


def event(name: str, message: str, *, unit: str | None = None, level: int = logging.INFO, **fields: Any) -> None:
    """Log one run event (`name`) with its unit id and fields."""
    log.log(level, message, extra={"event": name, "unit": unit, **fields})


class _BelowWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.WARNING  # warnings reach the terminal through the usual handler already


def show_on_terminal() -> Callable[[], None]:
    """`--verbose`: the command's log events (INFO) on stderr too, as plain lines; returns what stops it (the CLI
    calls it when the command ends)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.INFO)
    handler.addFilter(_BelowWarning())
    handler.addFilter(RedactingFilter())
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("injector")
    logger.addHandler(handler)
    level = logger.level
    if logger.getEffectiveLevel() > logging.INFO:  # a command without a log file: its INFO lines all the same
        logger.setLevel(logging.INFO)

    def stop() -> None:
        logger.removeHandler(handler)
        logger.setLevel(level)

    return stop
