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

TRANSIENT_ONLY = (ReasonCode.TRANSIENT_FAILURE.value,)
"""The codes of a reject a rerun tries again."""


@dataclass(eq=False)
class WrittenUnits:
    """What a run directory already holds, by unit id."""

    accepted: UnitIds = field(default_factory=UnitIds)
    """Units with a candidate (valued by the line of their first)."""
    rejects: UnitIds = field(default_factory=UnitIds)
    """Units with a reject (accepted ones too), valued by their latest reject: its line times two, plus one when it
    is a transient failure only (`is_transient`)."""

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
        return set(self.accepted) == set(other.accepted) and self._outcomes() == other._outcomes()

    def _outcomes(self) -> dict[str, bool]:
        """Whether each not-accepted unit's latest reject is transient (where the lines are does not count: a
        compaction moves them, and drops rejects of accepted units)."""
        return {unit: is_transient(value) for unit, value in self.rejects.items() if unit not in self.accepted}


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
        if unit in self.written.accepted:
            return True
        if self.retry_rejects:
            return False
        value = self.written.rejects.value(unit)
        return value is not None and not is_transient(value)

    def __iter__(self) -> Iterator[str]:
        yield from self.written.accepted
        if not self.retry_rejects:
            yield from (unit for unit, value in self.written.rejects.items()
                        if not is_transient(value) and unit not in self.written.accepted)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def is_transient(value: int) -> bool:
    """Whether a `WrittenUnits.rejects` value says the unit's latest reject is a transient failure only."""
    return bool(value & 1)


@dataclass
class Settled:
    """A run directory's outcome once each unit keeps its latest: the manifest's figures, and what to drop."""

    counts: RunCounts
    totals: RunTotals
    dropped: array = field(default_factory=lambda: array("q"))
    """Line numbers of rejects.jsonl a compaction drops (rejects of accepted units, and all but a unit's last), in
    increasing order."""


@dataclass
class Survey:
    """Both at once, from one pass over each index (in the usual case): what a rerun skips, and what `settle`
    gives now."""

    written: WrittenUnits
    settled: Settled


def survey(candidates: Iterable[IndexEntry], rejects: Iterable[IndexEntry]) -> Survey:
    """The units written (a unit with a candidate counts as accepted whatever rejects it has), and the counts and
    totals over each unit's first candidate and each not-accepted unit's latest reject (what the directory holds
    after `compact_rejects`) with the reject lines to drop. Each index is read once; again only when a unit repeats
    (two writers that both finished it, a reject tried again, a reject of a unit since accepted)."""
    tally = Tally()
    accepted = UnitIds(_counted(candidates, tally, None), keep="first")
    if accepted.repeated:  # count each unit's first candidate only
        tally = Tally()
        for entry in candidates:
            if entry.unit is not None and accepted.value(entry.unit) == entry.line:
                tally.add(entry)
    after_candidates = tally.copy()
    shadowed: list[int] = []
    latest = UnitIds(_counted(rejects, tally, accepted, shadowed), keep="last")
    dropped = array("q")
    if latest.repeated or shadowed:  # count each not-accepted unit's latest reject only; drop the others
        tally = after_candidates
        for entry in rejects:  # file order, as the records were summed
            if entry.unit is None:
                continue  # not a reject record: kept as it is, counted nowhere
            if entry.unit in accepted or latest.value(entry.unit, 0) >> 1 != entry.line:  # type: ignore[operator]
                dropped.append(entry.line)
            else:
                tally.add(entry)
    return Survey(WrittenUnits(accepted, latest), Settled(*tally.result(), dropped))


def _counted(entries: Iterable[IndexEntry], tally: Tally, accepted: UnitIds | None,
             shadowed: list[int] | None = None) -> Iterator[tuple[str, int]]:
    """(unit, value) of each record's entry, each added to `tally` (a reject only when its unit is not in
    `accepted`: else its line goes to `shadowed`). A candidate's value is its line; a reject's, its line times two
    plus 1 for a transient failure only."""
    for entry in entries:
        if entry.unit is None:
            continue
        if accepted is None:
            tally.add(entry)
            yield entry.unit, entry.line
            continue
        if entry.unit in accepted:
            assert shadowed is not None
            shadowed.append(entry.line)
        else:
            tally.add(entry)
        yield entry.unit, entry.line << 1 | (entry.codes == TRANSIENT_ONLY)


def written_units(candidates: Iterable[IndexEntry], rejects: Iterable[IndexEntry]) -> WrittenUnits:
    """`survey`'s units written."""
    return survey(candidates, rejects).written


def settle(candidates: Iterable[IndexEntry], rejects: Iterable[IndexEntry]) -> Settled:
    """`survey`'s counts, totals and lines to drop."""
    return survey(candidates, rejects).settled


def first_candidates(candidates: Iterable[IndexEntry]) -> Iterator[IndexEntry]:
    """The first candidate of each unit id (two writers that both finished a unit count once)."""
    seen = UnitIds()
    for entry in candidates:
        if entry.unit is not None and seen.add(entry.unit, replace=False) is None:
            yield entry


def count(candidates: Iterable[IndexEntry], rejects: Iterable[IndexEntry]) -> tuple[RunCounts, RunTotals]:
    """Counts by outcome, category and reason code, and the tokens and dollars, of the first candidate of each unit
    and every reject."""
    tally = Tally()
    for entries in (first_candidates(candidates), rejects):
        for entry in entries:
            tally.add(entry)
    return tally.result()


class Tally:
    """Counts by outcome, category and reason code, and the tokens and dollars, added up entry by entry (in plain
    numbers: a pydantic model's attribute costs a validation per assignment)."""

    def __init__(self) -> None:
        self.candidates = self.rejects = self.prompt_tokens = self.completion_tokens = 0
        self.cost, self.cost_known = 0.0, True
        self.by_category: dict[str, Counter[str]] = {}
        self.codes: Counter[str] = Counter()

    def copy(self) -> Tally:
        copied = Tally()
        copied.__dict__.update(self.__dict__)
        copied.by_category = {category: Counter(outcomes) for category, outcomes in self.by_category.items()}
        copied.codes = Counter(self.codes)
        return copied

    def add(self, entry: IndexEntry) -> None:
        if entry.unit is None:
            return
        if entry.codes is None:
            outcome = "candidates"
            self.candidates += 1
        else:
            outcome = "rejects"
            self.rejects += 1
            self.codes.update(entry.codes)
        outcomes = self.by_category.get(entry.category)
        if outcomes is None:
            outcomes = self.by_category[entry.category] = Counter()
        outcomes[outcome] += 1
        self.prompt_tokens += entry.prompt_tokens
        self.completion_tokens += entry.completion_tokens
        if entry.cost is None:
            self.cost_known = False
        else:
            self.cost += entry.cost

    def result(self) -> tuple[RunCounts, RunTotals]:
        counts = RunCounts(candidates=self.candidates, rejects=self.rejects, codes=dict(sorted(self.codes.items())),
                           by_category={k: dict(v) for k, v in sorted(self.by_category.items())})
        return counts, RunTotals(prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens,
                                 cost=self.cost, cost_known=self.cost_known)
