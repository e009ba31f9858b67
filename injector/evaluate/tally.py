"""Counting scores against thresholds as they come, without keeping them: the precision-recall curve of
`inject eval` (`metrics.error_detection_curve`)."""
from __future__ import annotations

from array import array
from typing import Iterable, Sequence


class AtOrBelow:
    """How many of the scores added are at or below each threshold (any order), counted a batch of raw doubles at
    a time."""

    BATCH = 1 << 14

    def __init__(self, thresholds: Sequence[float]) -> None:
        import numpy as np

        self._order = np.argsort(np.asarray(thresholds, dtype=float), kind="stable")
        self._sorted = np.asarray(thresholds, dtype=float)[self._order]
        self._tally = np.zeros(len(self._sorted) + 1, dtype=np.int64)
        self._batch = array("d")
        self.total = 0

    def add(self, score: float) -> None:
        self.extend((score,))

    def extend(self, scores: Iterable[float]) -> None:
        self._batch.extend(scores)
        if len(self._batch) >= self.BATCH:
            self._flush()

    def _flush(self) -> None:
        import numpy as np

        if self._batch:
            # A score is at or below the k-th sorted threshold when the first threshold at or above it is k or before.
            first = self._sorted.searchsorted(np.frombuffer(self._batch), side="left")
            self._tally += np.bincount(first, minlength=len(self._tally))
            self.total += len(self._batch)
            self._batch = array("d")

    def counts(self) -> list[int]:
        """Per threshold, in the order given, the number of scores at or below it."""
        import numpy as np

        self._flush()
        at_or_below = np.empty(len(self._sorted), dtype=np.int64)
        at_or_below[self._order] = np.cumsum(self._tally)[:len(self._sorted)]
        return [int(count) for count in at_or_below]

