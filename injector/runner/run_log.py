"""`<out>/log.jsonl`: what a run did, one JSON object a line (`time`, `level`, `event`, `unit`, `message` and the
event's fields), appended over the run directory's invocations. It is the `injector` logger's output while a run
holds the directory, so the toolkit's warnings land there too; `inject run --verbose` also shows it on the
terminal. Every line passes the redaction the terminal does (no key in a log)."""
from __future__ import annotations

import json
import logging
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

    def __init__(self, path: Path):
        super().__init__(logging.INFO)
        self.path = path
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
        try:
            text = redact(json.dumps(line, ensure_ascii=False, default=str))
            with self.path.open("a", encoding="utf-8") as handle:  # one write per line: appends stay whole
                handle.write(text + "\n")
        except OSError:  # a log that cannot be written must not stop the run; the records are what matter
            self.handleError(record)


@contextmanager
def run_log(run_dir: Path) -> Iterator[None]:
    """Write the `injector` logger's records of INFO and above to `run_dir/log.jsonl` for the duration."""
    handler = JsonLinesHandler(Path(run_dir) / LOG_FILE)
    logger = logging.getLogger("injector")
    level = logger.level
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def event(name: str, message: str, *, unit: str | None = None, level: int = logging.INFO, **fields: Any) -> None:
    """Log one run event (`name`) with its unit id and fields."""
    log.log(level, message, extra={"event": name, "unit": unit, **fields})


class _BelowWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.WARNING  # warnings reach the terminal through the usual handler already


def show_on_terminal() -> Callable[[], None]:
    """`--verbose`: the run's log events (INFO) on stderr too, as plain lines, while a run writes its log; returns
    what stops it (the CLI calls it when the command ends)."""
    import sys

    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.INFO)
    handler.addFilter(_BelowWarning())
    handler.addFilter(RedactingFilter())
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("injector")
    logger.addHandler(handler)
    return lambda: logger.removeHandler(handler)
