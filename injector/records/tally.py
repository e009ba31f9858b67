"""What a run directory holds, folded from its index entries (`unit_index`) in one pass: the units a rerun skips,
the counts and totals of the manifest, and the reject lines a compaction drops. Memory: a set of unit ids and the
rejects' latest entries, never the records."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from injector.model.codes import ReasonCode
from injector.records.models import RunCounts, RunTotals
from injector.records.unit_index import IndexEntry


@dataclass
class WrittenUnits:
    """What a run directory already holds, by unit id."""

    accepted: set[str] = field(default_factory=set)
    rejected: dict[str, list[str]] = field(default_factory=dict)
    """Unit id -> the codes of its latest reject."""

    def finished(self, retry_rejects: bool) -> set[str]:
        """Units a rerun skips: candidates, and rejects other than transient failures (unless retry_rejects)."""
        if retry_rejects:
            return set(self.accepted)
        final = {uid for uid, codes in self.rejected.items() if codes != [ReasonCode.TRANSIENT_FAILURE]}
        return self.accepted | final


def written_units(candidates: Iterable[IndexEntry], rejects: Iterable[IndexEntry]) -> WrittenUnits:
    """Units already written; a unit with a candidate counts as accepted whatever rejects it has."""
    units = WrittenUnits(accepted={entry.unit for entry in candidates if entry.unit is not None})
    lists: dict[tuple[str, ...] | None, list[str]] = {}  # one list per distinct codes, shared (never changed)
    for entry in rejects:
        if entry.unit is not None and entry.unit not in units.accepted:
            units.rejected[entry.unit] = lists.setdefault(entry.codes, list(entry.codes or ()))
    return units


@dataclass
class Settled:
    """A run directory's outcome once each unit keeps its latest: the manifest's figures, and what to drop."""

    counts: RunCounts
    totals: RunTotals
    dropped: set[int]
    """Line numbers of rejects.jsonl a compaction drops (rejects of accepted units, and all but a unit's last)."""


def first_candidates(candidates: Iterable[IndexEntry]) -> Iterator[IndexEntry]:
    """The first candidate of each unit id (two writers that both finished a unit count once)."""
    seen: set[str] = set()
    for entry in candidates:
        if entry.unit is not None and entry.unit not in seen:
            seen.add(entry.unit)
            yield entry


def settle(candidates: Iterable[IndexEntry], rejects: Iterable[IndexEntry]) -> Settled:
    """Counts and totals over the candidates and each not-accepted unit's latest reject (what the directory holds
    after `compact_rejects`), with the reject lines to drop; one pass over each index."""
    tally = Tally()
    accepted: set[str] = set()
    for entry in first_candidates(candidates):
        accepted.add(entry.unit or "")
        tally.add(entry)
    latest: dict[str, IndexEntry] = {}
    dropped: set[int] = set()
    for entry in rejects:
        if entry.unit is None:
            continue  # not a reject record: kept as it is, counted nowhere
        if entry.unit in accepted:
            dropped.add(entry.line)
            continue
        earlier = latest.get(entry.unit)
        if earlier is not None:
            dropped.add(earlier.line)
        latest[entry.unit] = entry
    for entry in sorted(latest.values(), key=lambda entry: entry.line):  # file order, as the records were summed
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
