"""A build's rows on disk: each row's record appended to a spill file in the staging directory as it is read, and
its `RowKey` (what ordering, ids, split assignment and the report need) to a table beside it (`row_keys.py`), so
a build holds neither the split nor a key per row; a row's record is read back by its offset when it is written
out."""
from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from injector.curate.row_keys import KeyTable, RowKey
from injector.model.split_row import SplitRow

__all__ = ["RowKey", "RowSpill"]


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
