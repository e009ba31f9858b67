"""The run directory: append-only candidates and rejects plus the manifest, one run at a time, any number of
appending processes (the records are in records/models.py, their line reader in records/jsonl.py).

Several writers, one directory: every append takes an exclusive `flock` on the JSONL file itself for the length of
one line, first cuts off a torn last line a killed writer left behind, then writes the whole line (or, on a full
disk, nothing). So any number of processes holding a `RunDirectory` of the same path (a run's worker processes, a
verify pass, Ray workers) may append at once: lines never interleave, and readers, who read whole lines only, see
every record each writer finished. The run lock (`.lock`, taken by `prepare`) still admits one *run* at a time:
a second `inject run` is refused, and a different configuration is refused by the manifest's `config_hash`.
Helpers append without it (`RunDirectory(path).join(config_hash)`, then `.append(...)`). The one rewrite,
`compact_rejects`, replaces the file under the same lock; an appender holding the old file notices (its inode is no
longer the path's) and reopens.
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
from array import array
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, TypeVar

from pydantic import BaseModel, ValidationError

from injector.records.jsonl import problem_of, read_records, scan_records
from injector.records.models import (CANDIDATES_FILE, MANIFEST_FILE, REJECTS_FILE, Candidate, Rejection, RunCounts,
                                      RunManifest, RunTotals)
from injector.records.tally import Settled, WrittenUnits, count, settle, survey
from injector.records.unit_index import HEADER, Entries, IndexEntry, IndexStale, UnitIndex, files_state
from injector.records.unit_ids import Digests, text_digest
from injector.util.errors import UserError, WriteFailed
from injector.util.json_bounds import JsonRefused, loads_bounded
from injector.util.safe_files import MAX_MANIFEST_BYTES, create_temporary, open_fd, open_read, read_text, write_replacing

log = logging.getLogger("injector")

__all__ = ["RunDirectory", "WrittenUnits"]

Folded = TypeVar("Folded")


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
        self._holding: set[Path] = set()
        """Files whose append lock `_held` holds now."""
        self._indexes = {path: UnitIndex(path, model, lambda path=path: self._held(path),  # type: ignore[misc]
                                         lambda: self._lock is not None)
                         for path, model in ((self.candidates_path, Candidate), (self.rejects_path, Rejection))}
        """The persisted index of each record file (records/unit_index.py)."""
        self._surveyed: tuple[tuple[Any, ...], Settled] | None = None
        """What `settle` would find, as `written` found it with the record files in the state noted beside it."""

    def read_manifest(self) -> RunManifest | None:
        """The run's manifest, typed; None when there is none. One that is no JSON or no manifest is a
        `UserError` naming the file (a received directory may hold anything)."""
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
        try:
            return RunManifest.model_validate(manifest)
        except ValidationError as exc:
            raise UserError(f"{self.manifest_path}: not a run manifest ({problem_of(exc)}); remove the run directory "
                            "or fix it") from None

    def prepare(self, config_hash: str) -> None:
        """Create the directory, or check that an existing one was made with the same configuration, and lock it."""
        manifest = self.read_manifest()
        if manifest is not None and manifest.config_hash != config_hash:
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
        if config_hash is not None and manifest.config_hash != config_hash:
            raise UserError(f"{self.path} holds a run with a different configuration; a helper appends only to the "
                            "run it belongs to")

    @contextmanager
    def exclusive(self, name: str, holder: str) -> Iterator[None]:
        """Hold the directory's lock file `name` (e.g. `.verify.lock`) for the block, without waiting: a second
        holder (another process, or another open of it here) is refused with a `UserError` naming the lock.
        `holder` says what holds it, for the message. The lock goes with the descriptor: a killed holder frees it."""
        path = self.path / name
        try:  # never through a link planted in a received directory
            fd = open_fd(path, os.O_WRONLY | os.O_CREAT)
        except OSError as exc:
            raise WriteFailed(path, exc) from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise UserError(f"{self.path} is being worked on by another {holder}, which holds {path}; wait for "
                                "it to finish, then run the same command again") from None
            yield
        finally:
            os.close(fd)

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
        """`numbered_candidates` with each line's byte offset in candidates.jsonl (for `records_at`)."""
        seen = Digests()  # ~40 bytes an id (a set of the id strings: ~120, what grew most in `stats` at scale)
        for number, offset, candidate in scan_records(self.candidates_path, Candidate, strict=strict):
            if seen.add(text_digest(candidate.id)) is None:
                yield number, offset, candidate

    def rejections(self, *, strict: bool = False) -> Iterator[Rejection]:
        """The run's rejects, typed, in file order (a unit tried again has several until `compact_rejects`)."""
        for _, rejection in read_records(self.rejects_path, Rejection, strict=strict):
            yield rejection

    def manifest_categories(self) -> dict[str, dict[str, str]]:
        """id -> name, domain and classification of each category, as the manifest recorded them; {} when there
        is no manifest."""
        manifest = self.read_manifest()
        return {} if manifest is None else manifest.categories

    def written(self) -> WrittenUnits:
        """Units already written; a unit with a candidate counts as accepted whatever rejects it has. Read from
        the records' index (caught up or rebuilt first when it does not match the files). What `settle` would find
        is kept too, for a run that then writes nothing (a resume of a finished run reads the index once)."""
        before = self._files_state()
        surveyed = self._fold(survey)
        self._surveyed = (before, surveyed.settled) if self._files_state() == before else None
        return surveyed.written

    def _settled(self) -> Settled:
        """`settle`'s figures: those `written` found when the record files are as they were then, else the index's."""
        surveyed, self._surveyed = self._surveyed, None
        if surveyed is not None and surveyed[0] == self._files_state():
            return surveyed[1]
        return self._fold(settle)

    def _files_state(self) -> tuple[Any, ...]:
        return files_state(self.candidates_path, self.rejects_path)

    def _fold(self, fold: Callable[[Iterable[IndexEntry], Iterable[IndexEntry]], Folded]) -> Folded:
        """`fold` over the candidates' and the rejects' index entries (each iteration reads them afresh); an index
        found not to be ours halfway is rebuilt and the fold done again."""
        candidates, rejects = self._indexes[self.candidates_path], self._indexes[self.rejects_path]
        try:
            return fold(Entries(candidates), Entries(rejects))
        except IndexStale as why:
            log.info("%s: rebuilding the index of its records (%s)", self.path, why)
            candidates.stale()
            rejects.stale()
            return fold(Entries(candidates), Entries(rejects))

    @contextmanager
    def _held(self, path: Path) -> Iterator[None]:
        """Hold `path`'s append lock for the block (already held by this object: the block runs under it)."""
        if path in self._holding:
            yield
            return
        fd = self._locked_appender(path)
        self._holding.add(path)
        try:
            yield
        finally:
            self._holding.discard(path)
            fcntl.flock(fd, fcntl.LOCK_UN)

    def append(self, record: Candidate | Rejection) -> None:
        """Append one record as one whole line, or nothing: a failed write raises `WriteFailed` naming the file.

        Safe with other writers of the same directory (see the module's docstring): the line is written under an
        exclusive lock on the file, after cutting off a torn last line a killed writer left.
        """
        path = self.candidates_path if isinstance(record, Candidate) else self.rejects_path
        data = (record.model_dump_json(exclude_unset=True) + "\n").encode("utf-8")
        self._append_bytes(path, data, lambda start: self._indexes[path].appended(start, data, record))

    def append_to(self, path: Path, record: BaseModel) -> None:
        """`append` for any record and any JSONL file of the directory (e.g. `inject verify`'s verify.jsonl): the
        same whole-line, locked, torn-tail-safe write."""
        # Only the fields that were set: the optional ones appear on disk only where they apply, as they always did.
        self._append_bytes(path, (record.model_dump_json(exclude_unset=True) + "\n").encode("utf-8"))

    def append_line(self, name: str, record: dict[str, Any]) -> None:
        """Append one JSON object as one whole line to the run directory's file `name` (e.g. `batches.jsonl`),
        under the same lock and torn-line rules as `append`; a failed write raises `WriteFailed`."""
        self._append_bytes(self.path / name, (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))

    def _append_bytes(self, path: Path, data: bytes, written: Callable[[int], None] | None = None) -> None:
        # Unbuffered writes on a descriptor kept open (opening a file costs about a millisecond here): a killed
        # process loses nothing it reported as written, and no buffer holds half a line to flush later. No fsync
        # per record: power loss may drop the last few lines, which a rerun redoes since they are not in the files.
        try:
            fd = self._locked_appender(path)
            try:
                _cut_torn_tail(fd, path)
                start = os.fstat(fd).st_size
                _append_whole(fd, data)
                if written is not None:  # still under the lock: the index entry follows its line
                    written(start)
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
        for index in self._indexes.values():
            index.close()

    def compact_rejects(self) -> None:
        """Keep each unit's latest outcome only: drop rejects of accepted units and all but the last reject of a
        unit tried again. Rewrites the file atomically, under the append lock, and only when there is something to
        drop; lines that are no reject record are kept as they are (they are not ours to drop)."""
        self.settle()

    def settle(self) -> tuple[RunCounts, RunTotals]:
        """`compact_rejects`, and the counts and totals of what the directory then holds (the manifest's): one
        pass over the records' index (none when nothing was written since `written`), and one over rejects.jsonl
        when something is dropped."""
        self.close_files()  # the rewrite replaces the file an open handle would still point at
        if not self.rejects_path.exists():
            settled = self._settled()
            return settled.counts, settled.totals
        try:
            with self._held(self.rejects_path):
                settled = self._settled()
                if settled.dropped:
                    self._rewrite_rejects(settled.dropped)
        except OSError as exc:
            raise WriteFailed(self.rejects_path, exc) from None
        finally:
            self.close_files()  # also releases the lock on the replaced file
        return settled.counts, settled.totals

    def _rewrite_rejects(self, dropped: array) -> None:
        """rejects.jsonl without the lines `dropped`, and its index, each written beside it and renamed into place
        (the index first: a crash between the two leaves an index that does not match, rebuilt when next read)."""
        index = self._indexes[self.rejects_path]
        temporary = self.rejects_path.with_suffix(".jsonl.tmp")
        index_temporary = index.path.with_name(index.path.name + ".tmp")
        try:
            with open_read(self.rejects_path) as source, create_temporary(temporary) as out, \
                    create_temporary(index_temporary) as index_out:
                index_out.write(HEADER)
                line = end = 0
                drops = iter(dropped)  # in increasing order, as the entries
                drop = next(drops, None)
                for raw, entry in zip(source, index.entries()):  # the index has an entry per whole line
                    while drop is not None and drop < entry.line:
                        drop = next(drops, None)
                    if entry.line == drop or not raw.endswith(b"\n"):
                        continue
                    out.write(raw)
                    line, end = line + 1, end + len(raw)
                    index_out.write(entry.moved(line, end).encode())
            os.replace(index_temporary, index.path)
            os.replace(temporary, self.rejects_path)
        except OSError:
            temporary.unlink(missing_ok=True)  # the old file stays whole; the next run compacts it
            index_temporary.unlink(missing_ok=True)
            raise
        finally:
            index.close()

    def count_outcomes(self) -> tuple[RunCounts, RunTotals]:
        """Counts by outcome, category and reason code, and the tokens and dollars spent, over everything the
        directory holds (every reject line; after `compact_rejects`, each unit's latest). From the index."""
        return self._fold(count)

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
