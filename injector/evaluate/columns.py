"""The solutions of a split and their step scores held as columns (a few bytes each), not as an object per
solution: what `inject eval --scores` keeps for the whole run (bench/RESULTS.md: ~1 KB a solution as `EvalItem`s,
ids and score arrays, 396 MB at 300k solutions).

- `SeenIds`: the ids met so far as 16-byte digests, each with the number of its first appearance.
- `ItemColumns`: a `Sequence[EvalItem]` whose items are made when read (their texts blank, as a scores file's
  metrics need none), from an id's UTF-8 bytes, a category code, a kind code, a step count and a label code.
- `ScoreColumns`: a `Mapping` of id -> step scores whose scores stay in the scores file: where each solution's line
  starts, read again (and checked again) when asked for.
"""
from __future__ import annotations

import math
import os
import weakref
from array import array
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence, overload

from injector.evaluate.metrics import CORRECT, ERROR, MULTI_SOLUTION, EvalItem
from injector.records.unit_ids import text_digest
from injector.util.errors import UserError
from injector.util.json_bounds import loads_bounded

KINDS = (ERROR, MULTI_SOLUTION, CORRECT)
RECENT = 1 << 16
"""Digests kept in a dict before they join the sorted array: a dict entry is ~120 bytes, a sorted one 20."""


def digest(key: str) -> bytes:
    """16 bytes of BLAKE2b, two different ids sharing one with a chance of ~2^-127 a pair; the last byte odd, as
    numpy's fixed-width bytes drop trailing zero bytes when read (a digest ending in one would not be found)."""
    hashed = text_digest(key)
    return hashed[:15] + bytes((hashed[15] | 1,))


class SeenIds:
    """Ids as digests with the number each was first added as (0, 1, ...): ~20 bytes an id, not a string and a
    dict entry (~150)."""

    def __init__(self) -> None:
        import numpy as np

        self._keys = np.empty(0, dtype="S16")
        self._numbers = np.empty(0, dtype=np.int32)
        self._recent: dict[bytes, int] = {}
        self.count = 0

    def find(self, key: str) -> int | None:
        """The number `key` was added as, or None."""
        return self._find(digest(key))

    def _find(self, hashed: bytes) -> int | None:
        number = self._recent.get(hashed)
        if number is not None or not len(self._keys):
            return number
        at = int(self._keys.searchsorted(hashed))
        return int(self._numbers[at]) if at < len(self._keys) and self._keys[at] == hashed else None

    def add(self, key: str) -> int | None:
        """The number an earlier `key` was added as; else None, and `key` is added as the next number."""
        hashed = digest(key)
        first = self._find(hashed)
        if first is None:
            self._recent[hashed] = self.count
            self.count += 1
            if len(self._recent) >= RECENT:
                self._merge()
        return first

    def _merge(self) -> None:
        import numpy as np

        keys = np.concatenate([self._keys, np.array(list(self._recent), dtype="S16")])
        numbers = np.concatenate([self._numbers, np.fromiter(self._recent.values(), dtype=np.int32,
                                                             count=len(self._recent))])
        order = keys.argsort(kind="stable")
        self._keys, self._numbers, self._recent = keys[order], numbers[order], {}


class _ItemsByNumber(Sequence[EvalItem]):
    """Items of an `ItemColumns` (`columns`) by number (`numbers`), each made when read."""

    @property
    def columns(self) -> ItemColumns:
        raise NotImplementedError

    @property
    def numbers(self) -> Sequence[int]:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, index: int) -> EvalItem: ...

    @overload
    def __getitem__(self, index: slice) -> list[EvalItem]: ...

    def __getitem__(self, index: int | slice) -> EvalItem | list[EvalItem]:
        if isinstance(index, slice):
            return [self.columns.item(number) for number in self.numbers[index]]
        return self.columns.item(self.numbers[index])

    def __iter__(self) -> Iterator[EvalItem]:
        for number in self.numbers:
            yield self.columns.item(number)


class ItemColumns(_ItemsByNumber):
    """The items of a split as columns; `items[k]` makes item k (its steps `""`, its question empty). `subset`
    views some of them without copying."""

    def __init__(self) -> None:
        self.ids, self.id_ends = bytearray(), array("Q")
        self.categories: list[str] = []
        self._category_codes: dict[str, int] = {}
        self.category, self.kind, self.n_steps, self.labels = array("i"), array("b"), array("i"), array("i")
        self._label_table: list[tuple[Any, Any, Any]] = []
        self._label_codes: dict[tuple[Any, Any, Any], int] = {}
        self._blank: dict[int, tuple[str, ...]] = {}
        self.seen = SeenIds()
        """The items' ids, numbered as the items are: how `index_of` finds one. A reader that checks for repeats
        adds each id here before its item (`append` then adds none)."""
        self.last: tuple[str, int] = ("", -1)
        """The id of the item made last and its number: `index_of` without a digest for the item just read."""

    def append(self, item: EvalItem) -> None:
        if self.seen.count <= len(self):  # not added by a reader first
            self.seen.add(item.id)
        encoded = item.id.encode("utf-8", "surrogatepass")
        self.ids += encoded
        self.id_ends.append(len(self.ids))
        self.category.append(self._category_codes.setdefault(item.category, len(self.categories)))
        if len(self._category_codes) > len(self.categories):
            self.categories.append(item.category)
        self.kind.append(KINDS.index(item.kind))
        self.n_steps.append(len(item.steps))
        label = (item.error_steps, item.first_error, item.given_error_steps)
        code = self._label_codes.setdefault(label, len(self._label_table))
        if code == len(self._label_table):
            self._label_table.append(label)
        self.labels.append(code)

    @property
    def columns(self) -> ItemColumns:
        return self

    @property
    def numbers(self) -> Sequence[int]:
        return range(len(self.id_ends))

    def id_of(self, index: int) -> str:
        return self.ids[self.id_ends[index - 1] if index else 0:self.id_ends[index]].decode("utf-8", "surrogatepass")

    def kind_of(self, index: int) -> str:
        return KINDS[self.kind[index]]

    def kind_counts(self) -> dict[str, int]:
        return {kind: self.kind.count(code) for code, kind in enumerate(KINDS)}

    def item(self, index: int) -> EvalItem:
        """Item `index` (numbered as appended)."""
        n_steps = self.n_steps[index]
        steps = self._blank.get(n_steps) or self._blank.setdefault(n_steps, ("",) * n_steps)
        error_steps, first_error, given = self._label_table[self.labels[index]]
        item_id = self.id_of(index)
        self.last = (item_id, index)
        return EvalItem(id=item_id, category=self.categories[self.category[index]], kind=KINDS[self.kind[index]],
                        steps=steps, error_steps=error_steps, first_error=first_error, given_error_steps=given)

    def index_of(self, item_id: str) -> int | None:
        """The number of the item with `item_id`, or None."""
        if item_id is self.last[0] or item_id == self.last[0]:
            return self.last[1]
        return self.seen.find(item_id)

    def subset(self, keep: Callable[[int], bool]) -> ItemSubset:
        """The items whose number `keep` accepts, in order (their numbers held, 4 bytes each)."""
        return ItemSubset(self, array("i", (k for k in range(len(self)) if keep(k))))


class ItemSubset(_ItemsByNumber):
    """Some items of an `ItemColumns`, by number."""

    def __init__(self, columns: ItemColumns, numbers: array) -> None:
        self._columns, self._numbers = columns, numbers

    @property
    def columns(self) -> ItemColumns:
        return self._columns

    @property
    def numbers(self) -> Sequence[int]:
        return self._numbers


def select(items: Sequence[EvalItem], keep: Callable[[EvalItem], bool]) -> Sequence[EvalItem]:
    """The items `keep` accepts, in order: of columns, an `ItemSubset` (4 bytes an item, not the item)."""
    if isinstance(items, _ItemsByNumber):
        return ItemSubset(items.columns, array("i", (number for number, item in zip(items.numbers, items)
                                                     if keep(item))))
    return [item for item in items if keep(item)]


class ScoreColumns(Mapping[str, "Sequence[float] | None"]):
    """Step scores (`key`: step_scores or redundancy_scores) of the items of an `ItemColumns`, read from a scores
    file's lines when asked for: per item, where its line starts (-1: no line), 8 bytes, not an array of doubles
    and its object (~250 bytes for a 16-step solution). Each read checks the line is still the one first read (a
    file changed since is refused, never half-read)."""

    def __init__(self, path: Path, items: ItemColumns, key: str) -> None:
        self.path, self.solutions, self.key = path, items, key
        self.starts = array("q", [-1]) * len(items)
        self.count = 0
        self._fd: int | None = None
        self._last: tuple[int, Any] = (-1, None)

    def put(self, index: int, start: int) -> None:
        self.count += self.starts[index] < 0
        self.starts[index] = start

    def has(self, index: int) -> bool:
        return self.starts[index] >= 0

    def at(self, index: int) -> Sequence[float] | None:
        """Item `index`'s scores (None when its line has none), read from its line; the last one read is kept, as
        the metrics ask for one item's scores a few times in a row."""
        if self._last[0] == index:
            return self._last[1]
        scores = self._scores(self._line_at(self.starts[index]), index)
        if scores is None:
            raise UserError(f"{self.path}: changed while `inject eval` read it; run it again on a file that stays "
                            "as it is")
        self._last = (index, scores)
        return scores

    def _scores(self, line: bytes, index: int) -> array | None:
        """The line's scores when it is still item `index`'s line, as checked when first read (the same id, as
        many scores, each in 0..1); else None. Checked in C (`min`, `max`, `sum` of the doubles): the first read's
        check per score was a third of the run's CPU made again."""
        try:
            record = loads_bounded(line.decode("utf-8"))
            scores = array("d", record[self.key])
        except (ValueError, TypeError, KeyError):
            return None
        n_steps = self.solutions.n_steps[index]
        if record.get("id") != self.solutions.id_of(index) or not n_steps <= len(scores) <= n_steps + 1 \
                or not scores or not 0 <= min(scores) <= max(scores) <= 1 or not math.isfinite(sum(scores)):
            return None
        return scores

    def _line_at(self, start: int) -> bytes:
        """The line that starts at `start`, read with `pread` (no buffer: what is read is what the file holds)."""
        if self._fd is None:
            try:
                self._fd = os.open(self.path, os.O_RDONLY)
                self._closer = weakref.finalize(self, os.close, self._fd)  # closed when dropped unclosed
            except OSError as exc:
                raise UserError(f"{self.path}: cannot read the scores file again ({exc.strerror or exc})") from None
        chunks, size = [], 1024
        while True:
            chunk = os.pread(self._fd, size, start)
            end = chunk.find(b"\n")
            if end >= 0 or not chunk:
                chunks.append(chunk[:end + 1] if end >= 0 else chunk)
                return b"".join(chunks)
            chunks.append(chunk)
            start, size = start + len(chunk), min(size * 2, 1 << 20)

    def close(self) -> None:
        if self._fd is not None:
            self._closer()
            self._fd = None

    def _index(self, key: object) -> int | None:
        index = self.solutions.index_of(key) if isinstance(key, str) else None
        return index if index is not None and self.starts[index] >= 0 else None

    def __getitem__(self, key: str) -> Sequence[float] | None:
        index = self._index(key)
        if index is None:
            raise KeyError(key)
        return self.at(index)

    def __contains__(self, key: object) -> bool:
        return self._index(key) is not None

    def __iter__(self) -> Iterator[str]:
        return (self.solutions.id_of(index) for index in range(len(self.solutions)) if self.starts[index] >= 0)

    def __len__(self) -> int:
        return self.count
