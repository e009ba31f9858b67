"""A set of unit ids held compactly: what a resume keeps of the units a run directory already holds.

A resume of a run of N units must know which of them are written, but not as N Python strings in a set (~0.4 KB a
unit with the set's slots and the strings' headers: 120 MB at 300k units, 350 MB for the whole of PRM800K). Here the
ids are UTF-8 bytes end to end in one buffer, found through an open-addressing table over their 64-bit hashes, all
in `array`s: ~30 bytes a unit besides the id's own bytes, in a handful of objects whose pages the forked workers that
inherit them never write (no object per id, so no reference count or garbage collection touches them).

A hash only says where an id may be: every hit is confirmed against the id's bytes, so two ids with the same hash
(however short the hash: the tests force a 2-bit one) are told apart, and a unit is never taken for another and
skipped. The hash is Python's own string hash (cached on each id, the same in the forked workers); a set is rebuilt
from its ids when unpickled, since another interpreter hashes strings with another key.
"""
from __future__ import annotations

import hashlib
import itertools
from array import array
from typing import Any, Callable, Iterable, Iterator

id_hash: Callable[[str], int] = hash
"""The hash that places an id (a module attribute so that a test can force collisions)."""

CHUNK = 4096
"""Ids read at a time when a set is made (held as strings meanwhile: 65,536 at a time cost 30 MB more peak RSS on
300k ids, and were no faster)."""
MAX_LOAD = 0.5
"""Filled slots per slot at most: linear probing then looks at ~1.5 slots per hit, ~2.5 per miss."""


class UnitIds:
    """A set of unit ids with a number per id: `in`, `len`, iteration (in the order first added), `value`, and
    `add` to grow it."""

    __slots__ = ("_hashes", "_ends", "_blob", "_values", "_table", "_mask", "repeated")

    def __init__(self, pairs: Iterable[tuple[str, int]] = (), *, keep: str = "last"):
        """The ids of `pairs` (id, value); for an id given several times, its `keep` ("first" or "last") value."""
        self._hashes, self._ends, self._values = array("q"), array("q", [0]), array("q")
        """Per id in the order added: its hash, where its bytes end in `_blob` (after a leading 0), its value."""
        self._blob = bytearray()
        pairs = iter(pairs)
        while chunk := list(itertools.islice(pairs, CHUNK)):  # all appended first, a chunk at a time (at C speed)
            units, values = zip(*chunk)
            encoded = [unit.encode("utf-8", "surrogatepass") for unit in units]
            self._hashes.extend(map(id_hash, units))
            self._ends.extend(itertools.accumulate(map(len, encoded), initial=len(self._blob)))
            self._ends.pop(-len(encoded) - 1)  # `initial` repeats the last end
            self._blob += b"".join(encoded)
            self._values.extend(values)
        size = 8
        while size * MAX_LOAD < len(self._hashes):
            size *= 2
        self._table, self._mask = array("i", bytes(size * array("i").itemsize)), size - 1
        """Slot -> 1 + the number of the id placed there (0: empty)."""
        repeats = self._place_all(keep == "last")
        self.repeated = len(repeats)
        """How many of the pairs repeated an id given before."""
        if repeats:
            self._drop(repeats)

    @classmethod
    def of(cls, units: Iterable[str]) -> UnitIds:
        """The set of `units` (each with value 0)."""
        return cls((unit, 0) for unit in units)

    def add(self, unit: str, value: int = 0, *, replace: bool = True) -> int | None:
        """Add `unit` with `value`; when it is in the set already, its value becomes `value` (unless `replace` is
        False). Returns the value it had before (None: it is new)."""
        place = self._find(unit)
        if place >= 0:
            before = self._values[place]
            if replace:
                self._values[place] = value
            return before
        self._hashes.append(id_hash(unit))
        self._blob += unit.encode("utf-8", "surrogatepass")
        self._ends.append(len(self._blob))
        self._values.append(value)
        if len(self._hashes) > len(self._table) * MAX_LOAD:
            self._grow()
        else:
            self._place(len(self._hashes) - 1)
        return None

    def _place(self, number: int) -> None:
        table, mask = self._table, self._mask
        slot = self._hashes[number] & mask
        while table[slot]:
            slot = (slot + 1) & mask
        table[slot] = number + 1

    def _place_all(self, last_wins: bool) -> list[int]:
        """Place every id; an id already placed (the same bytes) is not placed again: its number is returned, and
        with `last_wins` its value given to the first."""
        table, mask, hashes, ends, blob, values = self._table, self._mask, self._hashes, self._ends, self._blob, \
            self._values
        repeats = []
        for number, wanted in enumerate(hashes):
            slot = wanted & mask
            while (place := table[slot]):
                place -= 1
                if hashes[place] == wanted and blob[ends[place]:ends[place + 1]] == blob[ends[number]:ends[number + 1]]:
                    repeats.append(number)
                    if last_wins:
                        values[place] = values[number]
                    break
                slot = (slot + 1) & mask
            else:
                table[slot] = number + 1
        return repeats

    def _drop(self, repeats: list[int]) -> None:
        """The ids without the entries `repeats` (ids given again), placed again."""
        gone = set(repeats)
        kept = [number for number in range(len(self._hashes)) if number not in gone]
        blob, ends = bytearray(), array("q", [0])
        for number in kept:
            blob += self._blob[self._ends[number]:self._ends[number + 1]]
            ends.append(len(blob))
        self._hashes = array("q", (self._hashes[number] for number in kept))
        self._values = array("q", (self._values[number] for number in kept))
        self._blob, self._ends = blob, ends
        self._table = array("i", bytes(len(self._table) * self._table.itemsize))
        self._place_all(True)

    def _grow(self) -> None:
        """A table twice as large, every id placed again."""
        size = 2 * len(self._table)
        self._table, self._mask = array("i", bytes(size * self._table.itemsize)), size - 1
        for number in range(len(self._hashes)):
            self._place(number)

    def _find(self, unit: str) -> int:
        """The number of `unit`, or -1."""
        wanted = id_hash(unit)
        table, hashes, mask = self._table, self._hashes, self._mask
        slot = wanted & mask
        encoded: bytes | None = None
        while (place := table[slot]):
            place -= 1
            if hashes[place] == wanted:  # the same hash: the same id only if the same bytes
                if encoded is None:
                    encoded = unit.encode("utf-8", "surrogatepass")
                if self._blob[self._ends[place]:self._ends[place + 1]] == encoded:
                    return place
            slot = (slot + 1) & mask
        return -1

    def __contains__(self, unit: object) -> bool:
        return type(unit) is str and self._find(unit) >= 0

    def value(self, unit: str, default: int | None = None) -> int | None:
        """`unit`'s value, or `default` when it is not in the set."""
        place = self._find(unit)
        return default if place < 0 else self._values[place]

    def __len__(self) -> int:
        return len(self._hashes)

    def __iter__(self) -> Iterator[str]:
        for unit, _ in self.items():
            yield unit

    def items(self) -> Iterator[tuple[str, int]]:
        """(id, value) of every id, in the order first added."""
        ends, blob, values = self._ends, self._blob, self._values
        for number in range(len(self._hashes)):
            yield blob[ends[number]:ends[number + 1]].decode("utf-8", "surrogatepass"), values[number]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, UnitIds):
            return len(self) == len(other) and all(other.value(unit) == value for unit, value in self.items())
        if isinstance(other, (set, frozenset)):
            return len(other) == len(self) and all(unit in self for unit in other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"UnitIds({len(self)} ids)"

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt from its ids: another interpreter (a spawned process) hashes strings with another key.
        return (UnitIds, (list(self.items()),))


def text_digest(text: str) -> bytes:
    """The 16-byte digest `Digests` keeps for a string (an id): two ids share one with a chance of ~1e-26 among a
    million."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=Digests.WIDTH).digest()


class Digests:
    """A set of 16-byte digests with a number each (`add`, `put`, `value`, `len`): what is remembered per id where
    the id itself is never given back (the input's duplicate checks, a run's readers, the latest verdicts). ~40
    bytes a digest (its bytes, its number, its slots), where a `UnitIds` of the same keys as strings takes ~65:
    the keys are all as wide and already uniformly random, so they are their own hash and need no end offsets."""

    __slots__ = ("_keys", "_values", "_table", "_mask")
    WIDTH = 16

    def __init__(self) -> None:
        self._keys, self._values = bytearray(), array("q")
        self._table, self._mask = array("i", bytes(8 * array("i").itemsize)), 7
        """Slot -> 1 + the number of the digest placed there (0: empty)."""

    def add(self, digest: bytes, value: int = 0) -> int | None:
        """Add `digest` with `value` unless it is in the set; returns the value it has there (None: it is new)."""
        slot, place = self._find(digest)
        if place >= 0:
            return self._values[place]
        self._keys += digest
        self._values.append(value)
        if len(self._values) > len(self._table) * MAX_LOAD:
            self._grow()
        else:
            self._table[slot] = len(self._values)
        return None

    def put(self, digest: bytes, value: int) -> None:
        """`digest`'s value becomes `value` (added when new)."""
        if (before := self.add(digest, value)) is not None and before != value:
            self._values[self._find(digest)[1]] = value

    def value(self, digest: bytes) -> int | None:
        """`digest`'s value, or None when it is not in the set."""
        place = self._find(digest)[1]
        return None if place < 0 else self._values[place]

    def _find(self, digest: bytes) -> tuple[int, int]:
        """(the slot `digest` is in or would go to, the number of the digest there or -1)."""
        if len(digest) != self.WIDTH:
            raise ValueError(f"a digest of {len(digest)} bytes; Digests holds {self.WIDTH}-byte ones")
        keys, table, mask, width = self._keys, self._table, self._mask, self.WIDTH
        slot = int.from_bytes(digest[:8], "little") & mask
        while (place := table[slot]):
            start = (place - 1) * width
            if keys[start:start + width] == digest:
                return slot, place - 1
            slot = (slot + 1) & mask
        return slot, -1

    def _grow(self) -> None:
        """A table twice as large, every digest placed again."""
        size, width, keys = 2 * len(self._table), self.WIDTH, self._keys
        table, mask = array("i", bytes(size * self._table.itemsize)), size - 1
        for number in range(len(self._values)):
            slot = int.from_bytes(keys[number * width:number * width + 8], "little") & mask
            while table[slot]:
                slot = (slot + 1) & mask
            table[slot] = number + 1
        self._table, self._mask = table, mask

    def __len__(self) -> int:
        return len(self._values)
