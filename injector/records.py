"""What a run writes: `Candidate`, `Rejection` and `RunManifest`, and the run directory that holds them."""
from __future__ import annotations

import fcntl
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, ConfigDict, Field

from .codes import ReasonCode
from .errors import UserError, WriteFailed
from .json_bounds import TooDeep, loads_bounded

CANDIDATES_FILE = "candidates.jsonl"
REJECTS_FILE = "rejects.jsonl"
MANIFEST_FILE = "manifest.json"

log = logging.getLogger("injector")


class Candidate(BaseModel):
    """An injected solution that passed validation, in PRMBench's record format plus our own fields."""

    model_config = ConfigDict(extra="allow")

    original_question: str
    modified_question: str
    original_process: list[str]
    modified_process: list[str]
    modified_steps: list[int]
    """1-based indices into `modified_process` of the changed or inserted steps, computed from the text."""
    error_steps: list[int]
    reason: str
    idx: str
    """The source's own id (PRMBench `idx`, or the trajectory id)."""
    question: str
    """The raw problem text."""
    classification: str
    """The category's PRMBench id."""
    id: str
    category: str
    trajectory_id: str
    sample: int
    warnings: list[str] = Field(default_factory=list)
    provenance: dict[str, Any] = Field(default_factory=dict)


class Rejection(BaseModel):
    """A unit that produced no candidate, with every reason code that applied."""

    model_config = ConfigDict(extra="allow")

    id: str
    trajectory_id: str
    idx: str
    category: str
    sample: int
    codes: list[str]
    messages: list[str] = Field(default_factory=list)
    raw: str | None = None
    """The model's last answer text, when there was one."""
    provenance: dict[str, Any] = Field(default_factory=dict)


class RunManifest(BaseModel):
    """`manifest.json`: how a run was made and what it produced."""

    model_config = ConfigDict(extra="forbid")

    command: list[str]
    config: dict[str, Any]
    config_hash: str
    toolkit_version: str
    started: str
    finished: str | None = None
    status: str = "running"
    """running, finished, interrupted, budget_exceeded or failed."""
    categories: dict[str, dict[str, str]] = Field(default_factory=dict)
    """id -> name, domain and classification of each category run (categories built in Python included)."""
    skipped_categories: dict[str, str] = Field(default_factory=dict)
    """Categories the engine cannot make, with the reason (they are not units)."""
    source: dict[str, Any] = Field(default_factory=dict)
    """What the input loader read, selected and skipped (this invocation)."""
    image_base: str | None = None
    """The directory the run's local images were checked to lie under (the review app serves only from there)."""
    counts: dict[str, Any] = Field(default_factory=dict)
    totals: dict[str, Any] = Field(default_factory=dict)


def unit_id(trajectory_id: str, category_id: str, sample: int) -> str:
    """Deterministic id of a unit of work (trajectory, category, sample)."""
    return f"{trajectory_id}::{category_id}::{sample}"


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSONL file we wrote; a torn line (a write cut short by a kill) is skipped with a warning."""
    for _, record in read_jsonl_numbered(path):
        yield record


def read_jsonl_numbered(path: Path) -> Iterator[tuple[int, Any]]:
    """`read_jsonl` with the line number of each record; a line that is not UTF-8 is skipped as torn too."""
    if not path.exists():
        return
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, 1):
            line = raw.strip()
            if not line:
                continue
            try:
                yield number, loads_bounded(line.decode("utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                log.warning("%s:%d: ignoring a torn line (an interrupted write); its unit will be redone", path, number)
            except TooDeep as exc:  # never written by `inject run`: a received directory may hold anything
                log.warning("%s:%d: ignoring a line that is not a record (%s)", path, number, exc)


@dataclass
class WrittenUnits:
    """What a run directory already holds, by unit id."""

    accepted: set[str] = field(default_factory=set)
    rejected: dict[str, list[str]] = field(default_factory=dict)
    """Unit id -> the codes of its latest reject."""

    def finished(self, retry_rejects: bool) -> set[str]:
        """Units a rerun skips: candidates, and rejects other than transient failures (unless retry_rejects)."""
        if retry_rejects:
            return set(self.accepted)
        final = {uid for uid, codes in self.rejected.items() if codes != [ReasonCode.TRANSIENT_FAILURE]}
        return self.accepted | final


class RunDirectory:
    """A run directory: append-only candidates and rejects, plus the manifest; one writer at a time."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.candidates_path = self.path / CANDIDATES_FILE
        self.rejects_path = self.path / REJECTS_FILE
        self.manifest_path = self.path / MANIFEST_FILE
        self._lock: Any = None
        self._appenders: dict[Path, int] = {}
        """Open append-only descriptors of the JSONL files."""

    def read_manifest(self) -> dict[str, Any] | None:
        if not self.manifest_path.exists():
            return None
        try:
            manifest = loads_bounded(self.manifest_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, TooDeep) as exc:
            raise UserError(f"{self.manifest_path}: not valid JSON ({exc}); remove the run directory or fix it") from None
        except OSError as exc:
            raise UserError(f"{self.manifest_path}: cannot read it ({exc.strerror})") from None
        if not isinstance(manifest, dict):
            raise UserError(f"{self.manifest_path}: not a run manifest (a JSON object); remove the run directory or "
                            "fix it")
        return manifest

    def prepare(self, config_hash: str) -> None:
        """Create the directory, or check that an existing one was made with the same configuration, and lock it."""
        manifest = self.read_manifest()
        if manifest is not None and manifest.get("config_hash") != config_hash:
            raise UserError(
                f"{self.path} holds a run with a different configuration; "
                "choose another --out, or rerun with the settings recorded in its manifest.json"
            )
        if manifest is None and self.path.exists() and any(p.name != ".lock" for p in self.path.iterdir()):
            raise UserError(f"{self.path} exists and is not a run directory; choose another --out")
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock = (self.path / ".lock").open("w")
        except OSError as exc:
            raise WriteFailed(exc.filename or self.path, exc, "choose another --out, or fix its permissions") from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UserError(f"{self.path} is being written by another inject process; wait for it to finish") from None
        self._drop_torn_tails()

    def release(self) -> None:
        self.close_files()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _drop_torn_tails(self) -> None:
        # A kill mid-write can leave a last line without its newline; appending after it would corrupt two records.
        for path in (self.candidates_path, self.rejects_path):
            if path.exists() and path.stat().st_size:
                data = path.read_bytes()
                if not data.endswith(b"\n"):
                    log.warning("%s: dropping a torn last line (an interrupted write); its unit will be redone", path)
                    try:
                        os.truncate(path, data.rfind(b"\n") + 1)
                    except OSError as exc:
                        raise WriteFailed(path, exc) from None

    def written(self) -> WrittenUnits:
        """Units already written; a unit with a candidate counts as accepted whatever rejects it has."""
        units = WrittenUnits(accepted={record["id"] for record in read_jsonl(self.candidates_path)})
        for record in read_jsonl(self.rejects_path):
            if record["id"] not in units.accepted:
                units.rejected[record["id"]] = record.get("codes", [])
        return units

    def append(self, record: Candidate | Rejection) -> None:
        """Append one record as one whole line, or nothing: a failed write raises `WriteFailed` naming the file."""
        path = self.candidates_path if isinstance(record, Candidate) else self.rejects_path
        # Unbuffered writes on a descriptor kept open (opening a file costs about a millisecond here): a killed
        # process loses nothing it reported as written, and no buffer holds half a line to flush later. No fsync
        # per record: power loss may drop the last few lines, which a rerun redoes since they are not in the files.
        try:
            fd = self._appenders.get(path)
            if fd is None:
                fd = self._appenders[path] = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
            _append_whole(fd, (record.model_dump_json() + "\n").encode("utf-8"))
        except OSError as exc:
            raise WriteFailed(path, exc) from None

    def close_files(self) -> None:
        for fd in self._appenders.values():
            os.close(fd)
        self._appenders.clear()

    def compact_rejects(self) -> None:
        """Keep each unit's latest outcome only: drop rejects of accepted units and all but the last reject of a
        unit tried again. Rewrites the file atomically, and only when there is something to drop."""
        self.close_files()  # the rewrite replaces the file an open handle would still point at
        if not self.rejects_path.exists():
            return
        accepted = {record["id"] for record in read_jsonl(self.candidates_path)}
        last_line: dict[str, int] = {}
        total = 0
        for number, record in enumerate(read_jsonl(self.rejects_path)):
            last_line[record["id"]] = number
            total += 1
        keep = {number for uid, number in last_line.items() if uid not in accepted}
        if len(keep) == total:
            return
        temporary = self.rejects_path.with_suffix(".jsonl.tmp")
        try:
            with temporary.open("w", encoding="utf-8") as out:
                for number, record in enumerate(read_jsonl(self.rejects_path)):
                    if number in keep:
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
            os.replace(temporary, self.rejects_path)
        except OSError as exc:
            temporary.unlink(missing_ok=True)  # the old file stays whole; the next run compacts it
            raise WriteFailed(self.rejects_path, exc) from None

    def count_outcomes(self) -> dict[str, Any]:
        """Counts by outcome, category and reason code, over everything the directory holds."""
        by_category: dict[str, Counter[str]] = {}
        codes: Counter[str] = Counter()
        outcomes: Counter[str] = Counter()
        totals: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0, "cost_known": True}
        for outcome, path in (("candidates", self.candidates_path), ("rejects", self.rejects_path)):
            for record in read_jsonl(path):
                outcomes[outcome] += 1
                by_category.setdefault(record["category"], Counter())[outcome] += 1
                codes.update(record.get("codes", []))
                provenance = record.get("provenance", {})
                for key, value in (provenance.get("usage") or {}).items():
                    totals[key] = totals.get(key, 0) + value
                if provenance.get("cost") is None:
                    totals["cost_known"] = False
                else:
                    totals["cost"] += provenance["cost"]
        return {
            "candidates": outcomes["candidates"],
            "rejects": outcomes["rejects"],
            "codes": dict(sorted(codes.items())),
            "by_category": {k: dict(v) for k, v in sorted(by_category.items())},
            "totals": totals,
        }

    def write_manifest(self, manifest: RunManifest) -> None:
        temporary = self.manifest_path.with_suffix(".json.tmp")
        try:
            temporary.write_text(manifest.model_dump_json(indent=2) + "\n", encoding="utf-8")
            os.replace(temporary, self.manifest_path)
        except OSError as exc:
            temporary.unlink(missing_ok=True)  # a leftover would make the directory look like no run directory
            raise WriteFailed(self.manifest_path, exc) from None


def _append_whole(fd: int, data: bytes) -> None:
    """Write all of `data` at the end of the file, or cut the file back to where it was and raise.

    A full disk can accept part of a write before failing; a torn line would cost a record (and corrupt the next
    one written after it), so the file is truncated to its size before the write. One writer holds the lock.
    """
    start = os.fstat(fd).st_size
    written = 0
    try:
        while written < len(data):
            written += os.write(fd, data[written:])
    except OSError:
        try:
            os.ftruncate(fd, start)
        except OSError:  # the torn tail is then dropped when the run directory is next opened
            pass
        raise
