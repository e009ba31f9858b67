"""What a run writes: `Candidate`, `Rejection` and `RunManifest`, and the run directory that holds them.

Records are written typed and read back typed: `RunDirectory.candidates()` and `.rejections()` yield validated
models, and a line that is not a record (hand-edited, received from someone else) is skipped with a warning naming
FILE:LINE (or, with `strict=True`, is an `InputError` naming it), so no reader crashes on a received directory.

Several writers, one directory: every append takes an exclusive `flock` on the JSONL file itself for the length of
one line, first cuts off a torn last line a killed writer left behind, then writes the whole line (or, on a full
disk, nothing). So any number of processes holding a `RunDirectory` of the same path (a run's worker processes, a
verify pass, Ray workers) may append at once: lines never interleave, and readers, who read whole lines only, see
every record each writer finished. The run lock (`.lock`, taken by `prepare`) still admits one *run* at a time:
a second `inject run` is refused, and a different configuration is refused by the manifest's `config_hash`.
Helpers append without it (`RunDirectory(path).join(config_hash)`, then `.append(...)`). The one rewrite, `compact_rejects`, replaces the file
under the same lock; an appender holding the old file notices (its inode is no longer the path's) and reopens.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from injector.records.audit_flags import StepAuditFindings
from injector.model.codes import ReasonCode
from injector.answer.contract import FullAnswer, MultiSolutionAnswer
from injector.util.errors import InputError, UserError, WriteFailed
from injector.util.json_bounds import JsonRefused, loads_bounded
from injector.util.safe_files import (
    MAX_MANIFEST_BYTES,
    MAX_SIDE_FILE_BYTES,
    create_temporary,
    open_fd,
    open_read,
    read_text,
    write_replacing,
)
from injector.model.trajectory import Trajectory

CANDIDATES_FILE = "candidates.jsonl"
REJECTS_FILE = "rejects.jsonl"
MANIFEST_FILE = "manifest.json"

log = logging.getLogger("injector")


class Candidate(BaseModel):
    """An injected solution that passed validation, in PRMBench's record format plus our own fields."""

    model_config = ConfigDict(extra="allow")

    original_question: str
    modified_question: str
    original_process: list[str] = Field(min_length=1)
    modified_process: list[str] = Field(min_length=1)
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
    # Written only when they apply (`RunDirectory.append` writes the fields that were set), so records keep the
    # shape they have always had on disk.
    ground_truth: str | None = None
    """The source's known final answer (PRM800K `ground_truth_answer`, PRMBench `ground_truth`), when it has one."""
    explanations: dict[str, str] | None = None
    """Error step (its 1-based number in modified_process, as a string) -> what is wrong with it."""
    subject: str | None = None
    images: list[str] = Field(default_factory=list)
    """The trajectory's images, by reference (paths or URLs), never their data."""
    step_audit: StepAuditFindings | None = None
    """The step audit's flags, recorded as the candidate is written (injector/triage/step_audit/)."""

    @field_validator("explanations")
    @classmethod
    def _explanations_name_steps(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        if value is not None and not all(key.isdigit() for key in value):
            raise ValueError("expected an object {step number: text}")
        return value

    @model_validator(mode="after")
    def _steps_exist(self) -> "Candidate":
        size = len(self.modified_process)
        for name in ("modified_steps", "error_steps"):
            outside = [k for k in getattr(self, name) if not 1 <= k <= size]
            if outside:
                raise ValueError(f"{name} {outside} lie outside steps 1..{size} of modified_process")
        return self

    def as_answer(self, *, multi_solution: bool = False) -> FullAnswer | MultiSolutionAnswer:
        """The full-form answer this candidate corresponds to (explanations included), as `validate_answer` takes
        it; `multi_solution` (the category's rule) gives the multi-solution form."""
        if multi_solution:
            return MultiSolutionAnswer(modified_process=list(self.modified_process), reason=self.reason)
        return FullAnswer(modified_question=self.modified_question, modified_process=list(self.modified_process),
                          modified_steps=list(self.modified_steps), error_steps=list(self.error_steps),
                          reason=self.reason, explanations=dict(self.explanations) if self.explanations else None)

    def source_trajectory(self) -> Trajectory:
        """The correct solution this candidate was made from, as far as the record keeps it."""
        return Trajectory(id=self.trajectory_id, question=self.original_question, steps=list(self.original_process),
                          answer=self.ground_truth, images=list(self.images), subject=self.subject,
                          meta={"idx": self.idx, "question": self.question})


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
    """running, finished, interrupted, budget_exceeded, batches_pending (`--batch --no-wait`) or failed."""
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
    deployments: list[dict[str, Any]] = Field(default_factory=list)
    """The servers a Router run spread its requests over (`Engine.servers`: hosts and limits, never keys)."""


def unit_id(trajectory_id: str, category_id: str, sample: int) -> str:
    """Deterministic id of a unit of work (trajectory, category, sample)."""
    return f"{trajectory_id}::{category_id}::{sample}"


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Records of a JSONL file we wrote; a torn line (a write cut short by a kill) is skipped with a warning."""
    for _, record in read_jsonl_numbered(path):
        yield record


def read_jsonl_numbered(path: Path) -> Iterator[tuple[int, Any]]:
    """`read_jsonl` with the line number of each record; a line that is not UTF-8 is skipped as torn too (so is
    a last line another writer is still writing: it is not JSON until its end). A file that cannot be read at all
    is a `UserError`."""
    for number, _, value in _scan(path):
        yield number, value


def _scan(path: Path) -> Iterator[tuple[int, int, Any]]:
    """(line number, byte offset, decoded value) of every line of `path` that is JSON; see `read_jsonl_numbered`."""
    if not path.exists():
        return
    try:  # never through a symlink, never a FIFO or a device; side files within a size cap
        handle = open_read(path, None if path.name == CANDIDATES_FILE else MAX_SIDE_FILE_BYTES)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror}); check it is a file you may read") from None
    offset = 0
    with handle:
        for number, raw in enumerate(_lines(handle, path), 1):
            start, offset = offset, offset + len(raw)
            line = raw.strip()
            if not line:
                continue
            try:
                yield number, start, loads_bounded(line.decode("utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError):
                log.warning("%s:%d: ignoring a torn line (an interrupted write); its unit will be redone", path, number)
            except JsonRefused as exc:  # never written by `inject run`: a received directory may hold anything
                log.warning("%s:%d: ignoring a line that is not a record (%s)", path, number, exc)


def _lines(handle: Any, path: Path) -> Iterator[bytes]:
    try:
        yield from handle
    except OSError as exc:  # e.g. an I/O error halfway, or a directory opened as a file on some systems
        raise UserError(f"{path}: cannot read it ({exc.strerror}); check it is a file you may read") from None


Record = TypeVar("Record", Candidate, Rejection)


def problem_of(exc: ValidationError) -> str:
    """The first thing a `ValidationError` found wrong, in one line: `field.path: what is wrong`."""
    problem = exc.errors()[0]
    message = str(problem["msg"]).removeprefix("Value error, ")
    where = ".".join(map(str, problem["loc"]))
    return f"{where}: {message}" if where else message


def read_records(path: Path, model: type[Record], *, strict: bool = False) -> Iterator[tuple[int, Record]]:
    """(line, record) for every line of a JSONL file of `model` records that validates as one.

    Torn lines are skipped as `read_jsonl` does. A line that is JSON but no `model` record (a wrong type, a missing
    field, not an object) is skipped with a warning naming FILE:LINE; with `strict`, it is an `InputError` instead
    (a build must not silently leave a record out).
    """
    for number, _, record in scan_records(path, model, strict=strict):
        yield number, record


def scan_records(path: Path, model: type[Record], *, strict: bool = False) -> Iterator[tuple[int, int, Record]]:
    """`read_records` with each record's byte offset, for readers that come back to one record later
    (`record_at`)."""
    for number, offset, value in _scan(path):
        try:
            if not isinstance(value, dict):
                raise ValueError("a JSON object expected")
            yield number, offset, model.model_validate(value)
        except ValueError as exc:  # ValidationError is one
            problem = problem_of(exc) if isinstance(exc, ValidationError) else str(exc)
            message = f"not a {_noun(model)} record ({problem}); use a {path.name} written by `inject run`"
            if strict:
                raise InputError(str(path), number, message) from None
            log.warning("%s:%d: %s; skipped", path, number, message)


def record_at(path: Path, offset: int, model: type[Record]) -> Record:
    """The record on the line starting at byte `offset` of `path` (as `scan_records` gave it); a `UserError` if
    it is no longer there (the file was changed since)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return model.model_validate(loads_bounded(handle.readline()))
    except (OSError, ValueError) as exc:  # ValidationError, JSONDecodeError and TooDeep are ValueErrors
        raise UserError(f"{path}: the {_noun(model)} at byte {offset} cannot be read any more ({exc}); the file "
                        "changed while it was open: start again") from None


def _noun(model: type[BaseModel]) -> str:
    return "candidate" if model is Candidate else "reject"


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
    """A run directory: append-only candidates and rejects, plus the manifest; one run at a time, any number of
    appending processes (see the module's docstring)."""

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
            manifest = loads_bounded(read_text(self.manifest_path, MAX_MANIFEST_BYTES))
        except (json.JSONDecodeError, UnicodeDecodeError, JsonRefused) as exc:
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
            self._lock = os.fdopen(open_fd(self.path / ".lock", os.O_WRONLY | os.O_CREAT), "w")  # no link followed
        except OSError as exc:
            raise WriteFailed(exc.filename or self.path, exc, "choose another --out, or fix its permissions") from None
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise UserError(f"{self.path} is being written by another inject process; wait for it to finish") from None
        self._drop_torn_tails()

    def join(self, config_hash: str | None = None) -> None:
        """Check this is a run directory (of `config_hash`, when given) that another process may append to, without
        taking the run lock: for a run's helpers (worker processes, a verify pass), which append alongside it."""
        manifest = self.read_manifest()
        if manifest is None:
            raise UserError(f"{self.path}: not a run directory (no {MANIFEST_FILE}); start it with `inject run`")
        if config_hash is not None and manifest.get("config_hash") != config_hash:
            raise UserError(f"{self.path} holds a run with a different configuration; a helper appends only to the "
                            "run it belongs to")

    def release(self) -> None:
        self.close_files()
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _drop_torn_tails(self) -> None:
        # A kill mid-write can leave a last line without its newline; appending after it would corrupt two records.
        # (Every append checks this too; doing it here as well keeps a resumed run's readers from warning twice.)
        for path in (self.candidates_path, self.rejects_path):
            if path.exists() and path.stat().st_size:
                try:
                    fd = self._locked_appender(path)
                    try:
                        _cut_torn_tail(fd, path)
                    finally:
                        fcntl.flock(fd, fcntl.LOCK_UN)
                except OSError as exc:
                    raise WriteFailed(path, exc) from None

    def candidates(self, *, strict: bool = False) -> Iterator[Candidate]:
        """The run's candidates, typed; see `numbered_candidates`."""
        for _, candidate in self.numbered_candidates(strict=strict):
            yield candidate

    def numbered_candidates(self, *, strict: bool = False) -> Iterator[tuple[int, Candidate]]:
        """(line, candidate) for every candidate, the first line of a unit id only (two writers that both finished
        a unit, e.g. a retried worker, count once). A line that is not a candidate is skipped with a warning
        naming FILE:LINE, or with `strict` is an `InputError`."""
        for number, _, candidate in self.indexed_candidates(strict=strict):
            yield number, candidate

    def indexed_candidates(self, *, strict: bool = False) -> Iterator[tuple[int, int, Candidate]]:
        """`numbered_candidates` with each line's byte offset in candidates.jsonl (for `record_at`)."""
        seen: set[str] = set()
        for number, offset, candidate in scan_records(self.candidates_path, Candidate, strict=strict):
            if candidate.id not in seen:
                seen.add(candidate.id)
                yield number, offset, candidate

    def rejections(self, *, strict: bool = False) -> Iterator[Rejection]:
        """The run's rejects, typed, in file order (a unit tried again has several until `compact_rejects`)."""
        for _, rejection in read_records(self.rejects_path, Rejection, strict=strict):
            yield rejection

    def manifest_categories(self) -> dict[str, dict[str, str]]:
        """id -> name, domain and classification of each category, as the manifest recorded them; {} when it
        records none or they are not in that shape (the names are for display only)."""
        recorded = (self.read_manifest() or {}).get("categories")
        if not isinstance(recorded, dict):
            return {}
        return {str(cid): {str(k): str(v) for k, v in about.items()} for cid, about in recorded.items()
                if isinstance(about, dict)}

    def written(self) -> WrittenUnits:
        """Units already written; a unit with a candidate counts as accepted whatever rejects it has."""
        units = WrittenUnits(accepted={candidate.id for candidate in self.candidates()})
        for rejection in self.rejections():
            if rejection.id not in units.accepted:
                units.rejected[rejection.id] = rejection.codes
        return units

    def append(self, record: Candidate | Rejection) -> None:
        """Append one record as one whole line, or nothing: a failed write raises `WriteFailed` naming the file.

        Safe with other writers of the same directory (see the module's docstring): the line is written under an
        exclusive lock on the file, after cutting off a torn last line a killed writer left.
        """
        self.append_to(self.candidates_path if isinstance(record, Candidate) else self.rejects_path, record)

    def append_to(self, path: Path, record: BaseModel) -> None:
        """`append` for any record and any JSONL file of the directory (e.g. `inject verify`'s verify.jsonl): the
        same whole-line, locked, torn-tail-safe write."""
        # Only the fields that were set: the optional ones appear on disk only where they apply, as they always did.
        self._append_bytes(path, (record.model_dump_json(exclude_unset=True) + "\n").encode("utf-8"))

    def append_line(self, name: str, record: dict[str, Any]) -> None:
        """Append one JSON object as one whole line to the run directory's file `name` (e.g. `batches.jsonl`),
        under the same lock and torn-line rules as `append`; a failed write raises `WriteFailed`."""
        self._append_bytes(self.path / name, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))

    def _append_bytes(self, path: Path, data: bytes) -> None:
        # Unbuffered writes on a descriptor kept open (opening a file costs about a millisecond here): a killed
        # process loses nothing it reported as written, and no buffer holds half a line to flush later. No fsync
        # per record: power loss may drop the last few lines, which a rerun redoes since they are not in the files.
        try:
            fd = self._locked_appender(path)
            try:
                _cut_torn_tail(fd, path)
                _append_whole(fd, data)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError as exc:
            raise WriteFailed(path, exc) from None

    def _locked_appender(self, path: Path) -> int:
        """The append descriptor of `path`, under an exclusive lock, and still the file the path names (a
        `compact_rejects` elsewhere may have replaced it: then it is reopened)."""
        while True:
            fd = self._appenders.get(path)
            if fd is None:  # opened for reading too: the torn-tail check reads the last byte
                fd = self._appenders[path] = open_fd(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, mode=0o666)
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                current = False
            if current:
                return fd
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(self._appenders.pop(path))

    def close_files(self) -> None:
        for fd in self._appenders.values():
            os.close(fd)
        self._appenders.clear()

    def compact_rejects(self) -> None:
        """Keep each unit's latest outcome only: drop rejects of accepted units and all but the last reject of a
        unit tried again. Rewrites the file atomically, under the append lock, and only when there is something to
        drop; lines that are no reject record are kept as they are (they are not ours to drop)."""
        self.close_files()  # the rewrite replaces the file an open handle would still point at
        if not self.rejects_path.exists():
            return
        try:
            self._locked_appender(self.rejects_path)
        except OSError as exc:
            raise WriteFailed(self.rejects_path, exc) from None
        try:
            self._compact_locked()
        finally:
            self.close_files()  # also releases the lock on the replaced file

    def _compact_locked(self) -> None:
        accepted = {candidate.id for candidate in self.candidates()}
        numbered = list(read_records(self.rejects_path, Rejection))
        last_line = {rejection.id: number for number, rejection in numbered}
        drop = {number for number, rejection in numbered
                if rejection.id in accepted or last_line[rejection.id] != number}
        if not drop:
            return
        temporary = self.rejects_path.with_suffix(".jsonl.tmp")
        try:
            with open_read(self.rejects_path) as source, create_temporary(temporary) as out:
                for number, line in enumerate(source, 1):
                    if number not in drop and line.endswith(b"\n"):
                        out.write(line)
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
        records: list[tuple[str, Candidate | Rejection]] = [
            *(("candidates", c) for c in self.candidates()), *(("rejects", r) for r in self.rejections())]
        for outcome, record in records:
            outcomes[outcome] += 1
            by_category.setdefault(record.category, Counter())[outcome] += 1
            if isinstance(record, Rejection):
                codes.update(record.codes)
            usage = record.provenance.get("usage")
            for key, value in (usage.items() if isinstance(usage, dict) else ()):
                if isinstance(value, (int, float)):
                    totals[key] = totals.get(key, 0) + value
            cost = record.provenance.get("cost")
            if isinstance(cost, (int, float)):
                totals["cost"] += cost
            else:
                totals["cost_known"] = False
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
            write_replacing(self.manifest_path, (manifest.model_dump_json(indent=2) + "\n").encode("utf-8"))
        except OSError as exc:
            temporary.unlink(missing_ok=True)  # a leftover would make the directory look like no run directory
            raise WriteFailed(self.manifest_path, exc) from None


def _cut_torn_tail(fd: int, path: Path) -> None:
    """Cut a last line without its newline (a writer killed mid-line) off the file, under the append lock.

    No live writer is mid-line while we hold the lock, so a missing newline can only be a dead one's; appending
    after it would corrupt our line too. Reads backwards in blocks, so a long file costs a block, not its size.
    """
    size = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0:
        start = max(0, end - 65536)
        newline = os.pread(fd, end - start, start).rfind(b"\n")
        if newline >= 0:
            end = start + newline + 1
            break
        end = start
    log.warning("%s: dropping a torn last line (an interrupted write); its unit will be redone", path)
    os.ftruncate(fd, end)


def _append_whole(fd: int, data: bytes) -> None:
    """Write all of `data` at the end of the file, or cut the file back to where it was and raise.

    A full disk can accept part of a write before failing; a torn line would cost a record (and corrupt the next
    one written after it), so the file is truncated to its size before the write. The caller holds the append lock,
    so no other writer's line lies beyond that size.
    """
    start = os.fstat(fd).st_size
    written = 0
    try:
        while written < len(data):
            written += os.write(fd, data[written:])
    except OSError:
        try:
            os.ftruncate(fd, start)
        except OSError:  # the torn tail is then cut by the next append, or when the run directory is next opened
            pass
        raise
