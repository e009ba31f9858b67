"""What `--max-cost` leaves for one invocation, as its units reserve and spend it: a ledger the local loop keeps, or
one in shared memory that every `--workers` process reserves from, so that together they share the remaining
amount (a worker given its own share, or all of it, could pass the run's cap with the units it had in flight)."""
from __future__ import annotations

import contextlib
import multiprocessing
from typing import Any

WAIT = -1.0
"""`BudgetLedger.reserve`'s answer while the first unit is in flight and no unit's cost is known yet."""
_SPENT, _RESERVED, _LARGEST, _ENDED, _IN_FLIGHT = range(5)


class BudgetLedger:
    """Spent, reserved and the largest unit so far under `limit` dollars (None: no cap). A unit starts only while
    what is spent, what the units in flight hold and the largest unit's cost (reserved for it) stay within the
    limit; until a unit has ended (its cost unknown), one goes alone."""

    def __init__(self, limit: float | None, largest_unit: float = 0.0, *, shared: bool = False):
        self.limit = limit
        self._lock: Any
        self._values: Any
        if shared:  # fork-inherited: the worker processes of one invocation read and write the same numbers
            context = multiprocessing.get_context("fork")
            self._lock, self._values = context.Lock(), context.RawArray("d", 5)
        else:
            self._lock, self._values = contextlib.nullcontext(), [0.0] * 5
        self._values[_LARGEST] = largest_unit

    def reserve(self, *, first_alone: bool = True) -> float | None:
        """Dollars reserved for one more unit (0 without a cap); None when the limit has no room for it; `WAIT`
        while the first unit is still in flight and `first_alone` (then ask again)."""
        if self.limit is None:
            return 0.0
        with self._lock:
            values = self._values
            if first_alone and not values[_ENDED] and values[_IN_FLIGHT] and not values[_LARGEST]:
                return WAIT
            if self.limit <= 0 or values[_SPENT] + values[_RESERVED] + values[_LARGEST] > self.limit:
                return None
            reserved = float(values[_LARGEST])
            values[_RESERVED] += reserved
            values[_IN_FLIGHT] += 1
            return reserved

    def settle(self, reserved: float, cost: float | None) -> None:
        """A unit that reserved `reserved` ended, having cost `cost` (None: unknown, or it never asked)."""
        if self.limit is None:
            return
        with self._lock:
            values = self._values
            values[_RESERVED] -= reserved
            values[_IN_FLIGHT] -= 1
            values[_ENDED] += 1
            if cost:
                values[_SPENT] += cost
                values[_LARGEST] = max(values[_LARGEST], cost)
