"""What a run directory holds, folded from its index entries (`unit_index`): the units a rerun skips, the counts and
totals of the manifest, and the reject lines a compaction drops. Memory: unit ids in compact sets (`UnitIds`, ~30
bytes an id besides its own bytes) and the line numbers of what a compaction drops, never the records nor an object
per unit."""
from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from injector.model.codes import ReasonCode
from injector.records.models import RunCounts, RunTotals
from injector.records.unit_ids import UnitIds
from injector.records.unit_index import IndexEntry

FINAL, TRANSIENT = 0, 1
"""A reject's value in `WrittenUnits.rejects`: whether its latest reject was a transient failure only (which a rerun
tries again) or a final one."""
TRANSIENT_ONLY = (ReasonCode.TRANSIENT_FAILURE.value,)


@dataclass(eq=False)
class WrittenUnits:
    """What a run directory already holds, by unit id."""

    accepted: UnitIds = field(default_factory=UnitIds)
    """Units with a candidate."""
    rejects: UnitIds = field(default_factory=UnitIds)
    """Units with a reject (accepted ones too), valued FINAL or TRANSIENT by their latest reject."""

    @property
    def rejected(self) -> RejectedUnits:
        """Units with a reject and no candidate."""
        return RejectedUnits(self)

    def finished(self, retry_rejects: bool) -> FinishedUnits:
        """Units a rerun skips: candidates, and rejects other than transient failures (unless retry_rejects)."""
        return FinishedUnits(self, retry_rejects)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WrittenUnits):
            return NotImplemented
        return self.accepted == other.accepted and self._outcomes() == other._outcomes()

    def _outcomes(self) -> dict[str, int]:
        """Each not-accepted unit's reject value (a compaction drops rejects of accepted units: they do not count)."""
        return {unit: value for unit, value in self.rejects.items() if unit not in self.accepted}


@dataclass(frozen=True)
class RejectedUnits:
    """`WrittenUnits.rejected`: the units with a reject and no candidate (`in`, `len`, iteration)."""

    written: WrittenUnits

    def __contains__(self, unit: object) -> bool:
        return unit in self.written.rejects and unit not in self.written.accepted

    def __iter__(self) -> Iterator[str]:
        return (unit for unit in self.written.rejects if unit not in self.written.accepted)

    def __len__(self) -> int:
        return sum(1 for _ in self)


@dataclass(frozen=True)
class FinishedUnits:
    """`WrittenUnits.finished`: the units a rerun skips (`in`, `len`, iteration)."""

    written: WrittenUnits
    retry_rejects: bool

    def __contains__(self, unit: object) -> bool:
        if type(unit) is not str:
            return False
        return unit in self.written.accepted or (not self.retry_rejects and self.written.rejects.value(unit) == FINAL)

    def __iter__(self) -> Iterator[str]:
        yield from self.written.accepted
        if not self.retry_rejects:
            yield from (unit for unit, value in self.written.rejects.items()
                        if value == FINAL and unit not in self.written.accepted)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def written_units(candidates: Iterable[IndexEntry], rejects: Iterable[IndexEntry]) -> WrittenUnits:
    """Units already written; a unit with a candidate counts as accepted whatever rejects it has."""
    return WrittenUnits(
        accepted=UnitIds.of(entry.unit for entry in candidates if entry.unit is not None),
        rejects=UnitIds((entry.unit, TRANSIENT if entry.codes == TRANSIENT_ONLY else FINAL)
                        for entry in rejects if entry.unit is not None))


@dataclass
class Settled:
    """A run directory's outcome once each unit keeps its latest: the manifest's figures, and what to drop."""

    counts: RunCounts
    totals: RunTotals
    dropped: array
    """Line numbers of rejects.jsonl a compaction drops (rejects of accepted units, and all but a unit's last), in
    increasing order."""


def first_candidates(candidates: Iterable[IndexEntry], accepted: UnitIds | None = None) -> Iterator[IndexEntry]:
    """The first candidate of each unit id (two writers that both finished a unit count once), each unit added to
    `accepted` (its value: the line)."""
    seen = UnitIds() if accepted is None else accepted
    for entry in candidates:
        if entry.unit is not None and seen.add(entry.unit, entry.line, replace=False) is None:
            yield entry


def settle(candidates: Iterable[IndexEntry], rejects: Iterable[IndexEntry]) -> Settled:
    """Counts and totals over the candidates and each not-accepted unit's latest reject (what the directory holds
    after `compact_rejects`), with the reject lines to drop: one pass over the candidates' index, two over the
    rejects' (`rejects` is iterated twice)."""
    tally = Tally()
    accepted = UnitIds()
    for entry in first_candidates(candidates, accepted):
        tally.add(entry)
    latest = UnitIds((entry.unit, entry.line) for entry in rejects if entry.unit is not None)
    dropped = array("q")
    for entry in rejects:  # file order, as the records were summed
        if entry.unit is None:
            continue  # not a reject record: kept as it is, counted nowhere
        if entry.unit in accepted or latest.value(entry.unit) != entry.line:
            dropped.append(entry.line)
        else:
            tally.add(entry)
    return Settled(*tally.result(), dropped)


def count(candidates: Iterable[IndexEntry], rejects: Iterable[IndexEntry]) -> tuple[RunCounts, RunTotals]:
    """Counts by outcome, category and reason code, and the tokens and dollars, of the first candidate of each unit
    and every reject."""
    tally = Tally()
    for entries in (first_candidates(candidates), rejects):
        for entry in entries:
            tally.add(entry)
    return tally.result()


class Tally:
    """Counts by outcome, category and reason code, and the tokens and dollars, added up entry by entry."""

    def __init__(self) -> None:
        self.counts, self.totals = RunCounts(), RunTotals()
        self.by_category: dict[str, Counter[str]] = {}
        self.codes: Counter[str] = Counter()

    def add(self, entry: IndexEntry) -> None:
        if entry.unit is None:
            return
        outcome = "candidates" if entry.codes is None else "rejects"
        self.by_category.setdefault(entry.category, Counter())[outcome] += 1
        if entry.codes is None:
            self.counts.candidates += 1
        else:
            self.counts.rejects += 1
            self.codes.update(entry.codes)
        self.totals.prompt_tokens += entry.prompt_tokens
        self.totals.completion_tokens += entry.completion_tokens
        if entry.cost is None:
            self.totals.cost_known = False
        else:
            self.totals.cost += entry.cost

    def result(self) -> tuple[RunCounts, RunTotals]:
        self.counts.codes = dict(sorted(self.codes.items()))
        self.counts.by_category = {k: dict(v) for k, v in sorted(self.by_category.items())}
        return self.counts, self.totals
