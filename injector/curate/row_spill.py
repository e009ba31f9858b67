"""A build's rows on disk: each row's record appended to a spill file in the staging directory as it is read, and
its `RowKey` (what ordering, ids, split assignment and the report need) to a table beside it (`row_keys.py`), so
a build holds neither the split nor a key per row; a row's record is read back by its offset when it is written
out."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from injector.curate.row_keys import KeyTable
from injector.model.split_row import SplitRow


@dataclass(slots=True)
class RowKey:
    """One row of a build, without its text, as the key table gives it back: the fields `rows._unique_ids`,
    `rows._unique_idx`, `build.assign_splits` and the report read (the names `SplitRow` gives them), and where its
    record is."""

    id: str
    run: str
    category: str
    classification: str
    source_idx: str
    trajectory_id: str
    sample: int
    problem_key: str
    idx: str
    reviewed: bool
    _config_hash: str
    _verdict: str | None
    _audit_flagged: bool | None
    seq: int
    """The row's place in the order the runs were read (sources as correct controls after every candidate, from
    `row_keys.SOURCES_FROM`)."""
    offset: int
    """Where its record starts in the spill file."""


class RowSpill:
    """An append-only file of row records (one JSON line each), the way back to each by offset, and their keys
    (`keys`, an SQLite file beside it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._out: IO[bytes] | None = path.open("wb")
        self.keys = KeyTable(path.with_suffix(".sqlite"))
        self._in: IO[bytes] | None = None
        self.failed = False
        """Whether writing to the spill failed (a full disk): an `OSError` of the build's own file."""

    def add(self, row: SplitRow, *, source: bool = False) -> None:
        """Append `row`'s record, and its key to `keys` (a source as a correct control: after every candidate)."""
        assert self._out is not None, "the spill was read: no more rows"
        try:
            offset = self._out.tell()
            self._out.write(json.dumps(row.record(), ensure_ascii=False).encode() + b"\n")
            self.keys.add(row, offset, source=source)
        except OSError:
            self.failed = True
            raise

    def record(self, key: RowKey) -> dict[str, Any]:
        """The record of `key`'s row as the split's files hold it (its final `id` and `idx` from the key)."""
        if self._in is None:
            self.close_writing()
            self._in = self.path.open("rb")
        self._in.seek(key.offset)
        record = json.loads(self._in.readline())
        record["id"], record["idx"] = key.id, key.idx
        return record

    def records(self, keys: Iterable[RowKey]) -> Iterator[dict[str, Any]]:
        """The records of `keys`, in their order, one at a time."""
        return (self.record(key) for key in keys)

    def close_writing(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None

    def close(self) -> None:
        self.close_writing()
        if self._in is not None:
            self._in.close()
            self._in = None
        self.keys.close()

    def remove(self) -> None:
        """Close and delete both files (before the staging directory they are in becomes the split)."""
        self.close()
        self.path.unlink()
        self.keys.path.unlink()
