"""A run's provider batches as recorded in `RUN/batches.jsonl` (`BatchLog`), a batch output line's outcome, and
the table `inject status` shows; the batch engine (`batch.py`) writes what these read."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from injector.records.jsonl import read_jsonl
from injector.util.redaction import redact

BATCHES_FILE = "batches.jsonl"
TERMINAL = ("completed", "expired", "failed", "cancelled")
NOT_ADOPTABLE = ("failed", "cancelled", "cancelling")
RETRYABLE_LINE_STATUS = (408, 409, 429, 500, 502, 503, 504)


@dataclass
class BatchLog:
    """`RUN/batches.jsonl` read back: what was submitted, each batch's last recorded state, and for each request
    the batch that holds it now."""

    submitted: dict[str, dict[str, Any]] = field(default_factory=dict)
    states: dict[str, dict[str, Any]] = field(default_factory=dict)
    holder: dict[str, str] = field(default_factory=dict)
    """request key -> id of the latest batch it was submitted in."""
    submissions: Counter = field(default_factory=Counter)
    """request key -> batches it was submitted in."""
    intents: dict[str, dict[str, Any]] = field(default_factory=dict)
    """input file id -> the intent to create a batch from it, written before the create (write-ahead)."""
    settled: set[str] = field(default_factory=set)
    """Input file ids whose intent ended: the batch recorded as submitted, or none made (`abandoned`)."""

    def add(self, record: dict[str, Any]) -> None:
        event, file_id = record.get("event"), record.get("input_file_id")
        if event == "intent" and isinstance(file_id, str):
            self.intents[file_id] = record
        elif event in ("submitted", "abandoned") and isinstance(file_id, str):
            self.settled.add(file_id)
        if event == "submitted" and isinstance(record.get("batch_id"), str):
            self.submitted[record["batch_id"]] = record
            for key in record.get("keys", []):
                self.holder[key] = record["batch_id"]
                self.submissions[key] += 1
        elif event == "state" and isinstance(record.get("batch_id"), str):
            self.states[record["batch_id"]] = record

    def unsettled(self) -> list[dict[str, Any]]:
        """Intents with no outcome recorded: a run killed between "create" and "record" leaves one, its batch
        perhaps made (and paid for) by the provider."""
        return [intent for file_id, intent in self.intents.items() if file_id not in self.settled]

    def status(self, batch_id: str) -> str:
        return str((self.states.get(batch_id) or self.submitted.get(batch_id) or {}).get("status", "unknown"))


def read_batch_log(run_dir: str | Path) -> BatchLog:
    """The batch log of a run directory (empty when it has none); torn lines are skipped with a warning."""
    log = BatchLog()
    path = Path(run_dir) / BATCHES_FILE
    if path.exists():
        for record in read_jsonl(path):
            if isinstance(record, dict):
                log.add(record)
    return log


def batch_counts(batch: Any) -> dict[str, int]:
    counts = getattr(batch, "request_counts", None)
    return {name: int(getattr(counts, name, 0) or 0) for name in ("total", "completed", "failed")}


def line_outcome(line: dict[str, Any]) -> tuple[str, Any]:
    """("ok", completion), ("retry", why) for a failed or expired line worth resubmitting, ("fail", why) for a
    request the provider refused for good (a 4xx other than 408/409/429)."""
    response = line.get("response") or {}
    status = _status_code(response.get("status_code") if isinstance(response, dict) else None)
    if status == 200 and isinstance(response.get("body"), dict):
        return "ok", response["body"]
    body = response.get("body") if isinstance(response, dict) else None
    error = line.get("error") or (body.get("error") if isinstance(body, dict) else None)
    message = redact(str(error.get("message") if isinstance(error, dict) else error or f"status {status}"))
    if isinstance(status, int) and 400 <= status < 500 and status not in RETRYABLE_LINE_STATUS:
        return "fail", message
    return "retry", message


def _status_code(value: Any) -> int | None:
    """An HTTP status as the provider wrote it (200, or "200" from some gateways), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() and len(value.strip()) == 3:
        return int(value.strip())
    return None


def batch_table(run_dir: str | Path) -> str:
    """The batches of a run directory as last recorded: id, submission, requests, state and line counts."""
    log = read_batch_log(run_dir)
    if not log.submitted:
        return f"{run_dir}: no batches"
    rows = [f"{'batch':28} {'round':>5} {'requests':>8} {'state':12} {'completed':>9} {'failed':>6}"]
    states: Counter = Counter()
    for batch_id, record in log.submitted.items():
        state = log.states.get(batch_id, {})
        status = log.status(batch_id)
        states[status] += 1
        counts = state.get("counts") or {}
        rows.append(f"{batch_id:28} {record.get('submission', 1):>5} {record.get('requests', 0):>8} {status:12} "
                    f"{counts.get('completed', ''):>9} {counts.get('failed', ''):>6}")
    rows.append(f"{len(log.submitted)} batches: " + ", ".join(f"{n} {s}" for s, n in sorted(states.items())))
    return "\n".join(rows)
