"""`CueSample`: the rows the surface-cue probe reads, at most N per category — those whose ids hash smallest
(sha256), so the same rows on every machine whatever order they are read in — kept in a bounded heap per category
as the rows stream by. `inject build`'s card and `inject stats --cues` both draw their probe's rows here."""
from __future__ import annotations

import hashlib
import heapq
from collections import Counter
from typing import Any, Callable


def id_hash(row_id: Any) -> bytes:
    """The sampling key of a row with this id (`str(None)` for a row without one: such rows tie, and the first
    read are kept)."""
    return hashlib.sha256(str(row_id).encode()).digest()


class CueSample:
    """At most `per_category` rows of each category (every row with None), as their probe views; `rows()` gives
    them in the order they were offered."""

    def __init__(self, per_category: int | None = 5000) -> None:
        self.per_category = per_category
        self.seen: Counter = Counter()
        """Rows offered per category."""
        self._kept: dict[str, list[_Largest]] = {}
        self._offered = 0

    def offer(self, row_id: Any, category: str, view: Any) -> None:
        """One row: its `view` kept while its id hash is among its category's smallest."""
        self.offer_lazily(row_id, category, lambda: view)

    def offer_lazily(self, row_id: Any, category: str, view: Callable[[], Any]) -> None:
        """`offer`, the view made (`view()`) only when the row is kept."""
        self._offered += 1
        self.seen[category] += 1
        heap = self._kept.setdefault(category, [])
        if self.per_category is None:
            heap.append(_Largest((b"", self._offered, view())))  # every row: no heap order needed
            return
        key = (id_hash(row_id), self._offered)
        if len(heap) >= self.per_category and (not heap or not key < heap[0].entry[:2]):
            return
        item = _Largest((*key, view()))
        if len(heap) < self.per_category:
            heapq.heappush(heap, item)
        else:
            heapq.heapreplace(heap, item)

    def rows(self) -> list[Any]:
        """The kept rows' views, every category's, in the order they were offered."""
        return [entry[2] for entry in sorted((item.entry for heap in self._kept.values() for item in heap),
                                             key=lambda entry: entry[1])]

    def drawn(self) -> dict[str, dict[str, int]]:
        """Category -> {"records": rows kept, "of": rows offered}."""
        return {category: {"records": len(heap), "of": self.seen[category]} for category, heap in self._kept.items()}


class _Largest:
    """A heap item (id hash, offer number, view) ordered by the reverse of its (hash, number): `heapq`'s min-heap
    then holds the largest on top, the one a smaller newcomer replaces."""

    __slots__ = ("entry",)

    def __init__(self, entry: tuple[bytes, int, Any]) -> None:
        self.entry = entry

    def __lt__(self, other: _Largest) -> bool:
        return self.entry[:2] > other.entry[:2]
