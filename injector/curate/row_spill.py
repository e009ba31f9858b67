"""A build's rows on disk: each row's record appended to a spill file in the staging directory as it is read, and
in memory only a `RowKey` per row (what ordering, ids, split assignment and the report need) and its record's offset
(in an array of the spill's), so a build never holds the split; a row's record is read back by its offset when it is
written out."""
from __future__ import annotations

import marshal
import operator
import struct
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from injector.model.split_row import SplitRow


_LENGTH = struct.Struct("<Q")
"""The bytes of a record, before it in the spill."""


@dataclass(frozen=True, slots=True)
class RowKind:
    """The fields of a row that few rows tell apart (its run, category, verdict, ...): one object per value in a
    build, which its rows' keys share (a slot per row instead of eight)."""

    run: str
    category: str
    classification: str
    sample: int
    reviewed: bool
    config_hash: str
    verdict: str | None
    audit_flagged: bool | None


def _of_kind(field: str) -> Any:
    """A key's read-only attribute that is its kind's `field` (typed Any: one property a field, read in C)."""
    return property(operator.attrgetter(f"kind.{field}"))


@dataclass(slots=True)
class RowKey:
    """One row of a build, without its text: the fields `rows._unique_ids`, `rows._unique_idx`,
    `build.assign_splits` and the report read (the names `SplitRow` gives them), and where its record is."""

    id: str
    source_idx: str
    trajectory_id: str
    problem_key: str
    idx: str
    kind: RowKind
    seq: int
    """The row's place in the order the runs were read (sources as correct controls after every candidate), once
    `RowSpill.renumber` has set it (before: the order rows were added); its record's offset is the spill's
    `offsets[seq]` (an int object per row less)."""

    # The kind's fields under the names `SplitRow` gives them (what sorts and counts the keys read).
    run = _of_kind("run")
    category = _of_kind("category")
    classification = _of_kind("classification")
    sample = _of_kind("sample")
    reviewed = _of_kind("reviewed")
    _config_hash = _of_kind("config_hash")
    _verdict = _of_kind("verdict")
    _audit_flagged = _of_kind("audit_flagged")


class RowSpill:
    """An append-only file of row records, and the way back to each by offset. Each record is `marshal`led, after
    its length: the build writes every row once and reads it back twice or more, and marshal does both in under half
    of JSON's time (as fast as pickle). Unlike unpickling, loading it runs no code whatever the bytes, though the
    file is this build's own anyway, made and read by this process in its new staging directory."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._out: IO[bytes] | None = path.open("wb")
        self._in: IO[bytes] | None = None
        self.failed = False
        """Whether writing to the spill failed (a full disk): an `OSError` of the build's own file."""
        self.offsets = array("q")
        """Where each key's record starts in the file, by the key's `seq`."""
        self._shared: dict[str, str] = {}
        """One object per string value of the keys' repeated fields, while rows are added: a source's rows share
        its idx and problem key (each read afresh per row otherwise)."""
        self._kinds: dict[RowKind, RowKind] = {}
        """One `RowKind` per value, while rows are added."""

    def add(self, row: SplitRow) -> RowKey:
        """Append `row`'s record; its key."""
        assert self._out is not None, "the spill was read: no more rows"
        try:
            offset = self._out.tell()
            data = marshal.dumps(row.record())
            self._out.write(_LENGTH.pack(len(data)) + data)
        except OSError:
            self.failed = True
            raise
        share = self._share
        kind = RowKind(run=row.run, category=row.category, classification=row.classification, sample=row.sample,
                       reviewed=row.reviewed, config_hash=row._config_hash, verdict=row._verdict,
                       audit_flagged=row._audit_flagged)
        key = RowKey(id=row.id, source_idx=share(row.source_idx), trajectory_id=share(row.trajectory_id),
                     problem_key=share(row.problem_key), idx=share(row.idx), kind=self._kinds.setdefault(kind, kind),
                     seq=len(self.offsets))
        self.offsets.append(offset)
        return key

    def _share(self, text: str) -> str:
        return self._shared.setdefault(text, text)

    def renumber(self, keys: list[RowKey]) -> None:
        """Number `keys` (every key added, in their final order) by their place in it, their offsets moved along;
        no string is shared after this (the table is let go)."""
        assert len(keys) == len(self.offsets), "renumber every key the spill made"
        offsets = array("q", bytes(8 * len(keys)))
        for number, key in enumerate(keys):
            offsets[number] = self.offsets[key.seq]
            key.seq = number
        self.offsets, self._shared, self._kinds = offsets, {}, {}

    def record(self, key: RowKey) -> dict[str, Any]:
        """The record of `key`'s row as the split's files hold it (its final `id` and `idx` from the key)."""
        if self._in is None:
            self.close_writing()
            self._in = self.path.open("rb")
        self._in.seek(self.offsets[key.seq])
        (length,) = _LENGTH.unpack(self._in.read(_LENGTH.size))
        record = marshal.loads(self._in.read(length))
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
