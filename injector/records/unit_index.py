"""A persisted index of a run directory's records, so that a resume and a run's end read it once, not its files.

Beside `candidates.jsonl` and `rejects.jsonl` lie `.candidates.jsonl.idx` and `.rejects.jsonl.idx`: a header line,
then one short JSON line per line of the data file, in order — its line number, where it ends, its length and CRC-32,
and for a record its unit id, category, reject codes (None for a candidate), tokens and cost (a line that is no
record has only the first four). Every `RunDirectory.append` adds the entry under the data file's own append lock,
right after the line, when the index covers exactly the file before it (else it leaves the index behind).

Before it is read, an index is checked against its data file: the last entry must end where the file ends and name
the bytes there (length and CRC of the last line). An index behind its file (a writer killed between the two
writes, or lines appended by hand) is caught up by reading only the lines after it; one that does not match its
file (missing, truncated, rewritten, or not ours) is rebuilt in one pass over the file, written beside it and
renamed into place. Either way a reader gets entries that describe the file as it is.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ContextManager, Iterator

from injector.records.jsonl import NOT_JSON, as_record, scan_lines
from injector.records.models import Candidate, Rejection
from injector.util.safe_files import NotARegularFile, create_temporary, open_fd, open_read
from injector.util.errors import InjectorError

log = logging.getLogger("injector")

HEADER = b'["injector-unit-index",1]\n'
MAX_ENTRY_BYTES = 1 << 20
"""An index line longer than this is not ours: the index is rebuilt."""


class IndexStale(InjectorError):
    """The index does not describe its data file (or is no index of ours): rebuild it."""


def index_path(data_path: Path) -> Path:
    return data_path.with_name(f".{data_path.name}.idx")


@dataclass(slots=True)
class IndexEntry:
    """One line of a data file, as its index records it (not frozen: a frozen dataclass costs 7x more to make, and
    a resume makes one per record; none is changed after it is read)."""

    line: int
    end: int
    """Byte offset just past the line (its newline included)."""
    length: int
    crc: int
    unit: str | None = None
    """The record's unit id; None for a line that is no record (blank, torn, refused)."""
    category: str = ""
    codes: tuple[str, ...] | None = None
    """A reject's reason codes; None for a candidate."""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None

    def moved(self, line: int, end: int) -> IndexEntry:
        """This entry for the same line become line number `line`, ending at `end` (a rewrite moved it)."""
        return dataclasses.replace(self, line=line, end=end)

    def encode(self) -> bytes:
        fields: list[Any] = [self.line, self.end, self.length, self.crc]
        if self.unit is not None:
            fields += [self.unit, self.category, None if self.codes is None else list(self.codes),
                       self.prompt_tokens, self.completion_tokens, self.cost]
        return (json.dumps(fields, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")

    @classmethod
    def decode(cls, raw: bytes) -> IndexEntry:
        """The entry on one index line; `IndexStale` for anything that is not one."""
        fields = _fields(raw)
        if len(fields) == 4:
            (line, end, length, crc), unit = fields, None
        elif len(fields) == 10 and type(fields[4]) is str:
            line, end, length, crc, unit, category, codes, prompt, completion, cost = fields
        else:
            raise IndexStale("not an index entry")
        if not (type(line) is int and type(end) is int and type(length) is int and type(crc) is int
                and line >= 0 and end >= length >= 0):
            raise IndexStale("not an index entry")
        if unit is None:
            return cls(line, end, length, crc)
        if codes is not None:
            if type(codes) is not list or not all(type(code) is str for code in codes):
                raise IndexStale("not an index entry")
            codes = _shared(tuple(codes))
        if not (type(category) is str and type(prompt) is int and type(completion) is int
                and (cost is None or type(cost) in (int, float))):
            raise IndexStale("not an index entry")
        return cls(line, end, length, crc, unit, _shared(category), codes, prompt, completion,
                   None if cost is None else float(cost))


_scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # set by its __init__, not in the stubs
"""The C scanner `json.loads` ends in, called directly: a resume decodes one index line per record, and the
wrapper's checks cost more than the parse."""


def _fields(raw: bytes) -> list[Any]:
    """The JSON list on an index line (bounded in size; nesting is bounded by the scanner's recursion check)."""
    try:
        if len(raw) > MAX_ENTRY_BYTES:
            raise ValueError("too long")
        text = raw.decode("utf-8")
        fields, end = _scan_json(text, 0)
    except (ValueError, RecursionError, StopIteration):
        raise IndexStale("not an index entry") from None
    if type(fields) is not list or (end != len(text) and not text[end:].isspace()):
        raise IndexStale("not an index entry")
    return fields


_SHARED: dict[Any, Any] = {}
SHARED_VALUES = 4096
"""Distinct categories and code lists kept as one object each (a run has a few dozen): 300k entries then hold
references, not 300k copies of the same strings."""


def _shared(value: Any) -> Any:
    if len(_SHARED) < SHARED_VALUES:
        return _SHARED.setdefault(value, value)
    return _SHARED.get(value, value)


def entry_of(record: Candidate | Rejection | None, line: int, end: int, raw: bytes) -> IndexEntry:
    """The index entry of data line number `line`, `raw`, ending at byte `end`, holding `record` (None: no record)."""
    crc = zlib.crc32(raw)
    if record is None:
        return IndexEntry(line, end, len(raw), crc)
    usage = record.provenance.usage
    return IndexEntry(line, end, len(raw), crc, record.id, record.category,
                      tuple(record.codes) if isinstance(record, Rejection) else None,
                      usage.prompt_tokens, usage.completion_tokens, record.provenance.cost)


class UnitIndex:
    """The index of one data file (see the module's docstring). `lock` holds the data file's append lock (the one
    every appender takes), so no line is added while the index is caught up or rebuilt. `keeps`: whether this
    process holds the run (`RunDirectory.prepare`) and so keeps the index up to date; any other reader (a received
    directory, a dry run) uses an index only as it finds it, and reads the file when it does not match."""

    def __init__(self, data_path: Path, model: type[Candidate] | type[Rejection],
                 lock: Callable[[], ContextManager[Any]], keeps: Callable[[], bool]):
        self.data_path, self.model, self.lock, self.keeps = data_path, model, lock, keeps
        self.path = index_path(data_path)
        self._fd: int | None = None

    # ----------------------------------------------------------------------------------------- writing

    def appended(self, start: int, raw: bytes, record: Candidate | Rejection) -> None:
        """Add the entry of `raw`, just written at byte `start` of the data file; the caller holds the append lock.
        Left behind (caught up when next read) when the index does not end at `start`, or cannot be written."""
        try:
            fd = self._descriptor()
            _cut_torn_tail(fd)
            if start == 0:  # a new data file: whatever stood here described another one
                os.ftruncate(fd, 0)
                _write_all(fd, HEADER)
                line = 1
            else:
                last = _last_entry(fd)
                if last is None or last.end != start:
                    return
                line = last.line + 1
            _write_all(fd, entry_of(record, line, start + len(raw), raw).encode())
        except (OSError, IndexStale) as exc:  # the data line is written; the index catches up when next read
            log.debug("%s: index left behind (%s)", self.path, exc)

    def _descriptor(self) -> int:
        """The index's descriptor, reopened when the path names another file now (a rebuild replaced it)."""
        if self._fd is not None:
            try:
                if os.stat(self.path).st_ino == os.fstat(self._fd).st_ino:
                    return self._fd
            except FileNotFoundError:
                pass
            self.close()
        self._fd = open_fd(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, mode=0o666)
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    # ----------------------------------------------------------------------------------------- reading

    def entries(self) -> Iterator[IndexEntry]:
        """Every entry, in file order, of an index made to describe the data file as it is now (caught up or
        rebuilt first when needed). A directory the index cannot be written in gets the entries of one pass over
        the data file instead."""
        if not self.data_path.exists():
            return iter(())
        if not self.keeps():
            return self._as_found()
        try:
            with self.lock():
                self._refresh()
        except OSError as exc:
            log.debug("%s: cannot keep an index (%s); reading the file", self.path, exc)
            return self._scan(0, 1)
        return self._stored()

    def _as_found(self) -> Iterator[IndexEntry]:
        """The stored entries when the index matches the file, else one pass over the file; nothing written."""
        try:
            last = self._checked_last(os.stat(self.data_path).st_size)
        except (IndexStale, OSError, NotARegularFile):  # e.g. a link planted in its place: not read
            last = None
        if last is None:
            return self._scan(0, 1)
        return itertools.chain(self._stored(), self._scan(last.end, last.line + 1))

    def _stored(self) -> Iterator[IndexEntry]:
        with open_read(self.path, None) as handle:
            if handle.readline() != HEADER:
                raise IndexStale("no index header")
            for raw in handle:
                if raw.endswith(b"\n"):
                    yield IndexEntry.decode(raw)

    def _refresh(self) -> None:
        """Under the append lock: check the index against the data file; catch it up or rebuild it."""
        size = os.stat(self.data_path).st_size
        try:
            last = self._checked_last(size)
        except IndexStale as why:
            log.info("%s: rebuilding the index of %s (%s)", self.path, self.data_path.name, why)
            self._rebuild()
            return
        if last.end < size:  # lines written after it: read those only
            fd = self._descriptor()
            _cut_torn_tail(fd)
            for entry in self._scan(last.end, last.line + 1):
                _write_all(fd, entry.encode())

    def _checked_last(self, size: int) -> IndexEntry:
        """The index's last entry (line 0 ending at 0 when it has none) if it names the data file's bytes there."""
        try:
            fd = open_fd(self.path, os.O_RDONLY)
        except FileNotFoundError:
            raise IndexStale("no index") from None
        try:
            if os.pread(fd, len(HEADER), 0) != HEADER:
                raise IndexStale("no index header")
            last = _last_entry(fd) or IndexEntry(0, 0, 0, 0)
        finally:
            os.close(fd)
        if last.end > size:
            raise IndexStale("the file is shorter than the index says (truncated or rewritten)")
        if last.line:
            with open_read(self.data_path, None) as data:
                data.seek(last.end - last.length)
                raw = data.read(last.length)
            if len(raw) != last.length or zlib.crc32(raw) != last.crc or not raw.endswith(b"\n"):
                raise IndexStale("the file's bytes differ from the index's (rewritten)")
        return last

    def _rebuild(self) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        try:
            with create_temporary(temporary) as out:
                out.write(HEADER)
                for entry in self._scan(0, 1):
                    out.write(entry.encode())
            os.replace(temporary, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise
        self.close()

    def _scan(self, start: int, first: int) -> Iterator[IndexEntry]:
        """Entries of the data file's whole lines from byte `start` (line `first`): one pass, each record
        validated as every reader does (a line that is no record warned about, and entered as no record)."""
        for number, offset, raw, value in scan_lines(self.data_path, start, first):
            if not raw.endswith(b"\n"):
                return  # being written, or torn (cut when the run next opens the directory)
            record: Candidate | Rejection | None = None
            if value is not NOT_JSON:
                record = as_record(self.data_path, number, value, self.model)  # type: ignore[type-var]
            yield entry_of(record, number, offset + len(raw), raw)

    def stale(self) -> None:
        """Forget the index (it proved not to be one of ours): the next `entries` rebuilds it."""
        self.close()
        self.path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Entries:
    """An index's entries as an iterable: each iteration reads them afresh (`UnitIndex.entries`)."""

    index: UnitIndex

    def __iter__(self) -> Iterator[IndexEntry]:
        return self.index.entries()


def files_state(*paths: Path) -> tuple[Any, ...]:
    """Which bytes the files hold, as far as an append or a rewrite would change it: device, inode, size and
    modification time of each (None: no such file)."""
    state: list[Any] = []
    for path in paths:
        try:
            status = os.stat(path)
        except FileNotFoundError:
            state.append(None)
            continue
        state.append((status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns))
    return tuple(state)


def _last_entry(fd: int) -> IndexEntry | None:
    """The last whole entry of an index (None when it has only its header)."""
    size = os.fstat(fd).st_size
    end = size
    while end > 0 and os.pread(fd, 1, end - 1) != b"\n":
        end -= 1  # a torn last line (an interrupted write) is not an entry; it is cut before the next append
    block = b""
    start = end
    while True:
        start = max(0, start - 4096)
        block = os.pread(fd, end - start, start)
        newline = block.rfind(b"\n", 0, len(block) - 1)
        if newline >= 0 or start == 0:
            break
    raw = block[newline + 1:]
    if start + newline + 1 < len(HEADER):
        return None
    return IndexEntry.decode(raw)


def _cut_torn_tail(fd: int) -> None:
    size = os.fstat(fd).st_size
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return
    end = size
    while end > 0 and os.pread(fd, 1, end - 1) != b"\n":
        end -= 1
    os.ftruncate(fd, end)


def _write_all(fd: int, data: bytes) -> None:
    written = 0
    while written < len(data):
        written += os.write(fd, data[written:])
