"""`CardFigures`: what the dataset card reports of a split's rows, gathered one row at a time, so a build keeps
these aggregates (and a bounded sample for the cue probe) rather than the rows themselves."""
from __future__ import annotations

import hashlib
import heapq
import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

POSITION_BINS = (0.2, 0.4, 0.6, 0.8, 1.0)


def error_steps_inside(row: dict[str, Any]) -> list[int]:
    """The error step numbers that name a step of `modified_process` (published files hold some past the end)."""
    return [k for k in row["error_steps"] if isinstance(k, int) and 1 <= k <= len(row["modified_process"])]


def relative_error_position(row: dict[str, Any]) -> float | None:
    """First error step ÷ number of steps (1-based, in (0, 1]); None without an error step."""
    errors = error_steps_inside(row)
    return min(errors) / len(row["modified_process"]) if errors else None


def record_answer_changed(row: dict[str, Any]) -> bool | None:
    """Whether the modified solution's final answer differs from the source's (`ground_truth`, else the original
    steps' answer), by the toolkit's own extraction and equivalence; None when either answer cannot be found."""
    from injector.answer.final import answers_equivalent, final_answer_of_steps

    source = row.get("ground_truth") or final_answer_of_steps(row["original_process"])
    new = final_answer_of_steps(row["modified_process"])
    if source is None or new is None:
        return None
    return not answers_equivalent(str(source), new)


def _id_hash(row: dict[str, Any]) -> bytes:
    return hashlib.sha256(str(row.get("id")).encode()).digest()


@dataclass
class CategoryFigures:
    """One category's rows: how many, how often the answer changed, error steps, where the first error sits."""

    rows: int = 0
    changed: int = 0
    """Rows whose final answer changed, among the `answers_found` rows where both answers were found."""
    answers_found: int = 0
    error_steps: int = 0
    positions: list[float] = field(default_factory=list)
    """First error ÷ steps per row with one (a float each: kept so the mean sums in the rows' order)."""


@dataclass
class CardFigures:
    """The card's figures over the rows `add`ed, in the split's row order (`report.rows`); `cue_sample` rows per
    category at most are kept for the cue probe (those with the smallest id hashes, as `card.cue_sample` picks)."""

    cue_sample: int | None = 5000
    categories: dict[str, CategoryFigures] = field(default_factory=lambda: defaultdict(CategoryFigures))
    reviewed: Counter = field(default_factory=Counter)
    domain_of: dict[str, str] = field(default_factory=dict)
    domains: Counter = field(default_factory=Counter)
    accepted_by_reviewers: int = 0
    models: Counter = field(default_factory=Counter)
    histogram: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    cues: tuple[dict[str, Any] | None, str] | None = None
    """The cue probe's report and the card's note on it, once `card.probe_cues` ran (the sample is then gone)."""
    _sampled: dict[str, list[_Largest]] = field(default_factory=dict)

    @classmethod
    def of(cls, rows: Iterable[dict[str, Any]], cue_sample: int | None = 5000) -> CardFigures:
        figures = cls(cue_sample=cue_sample)
        for row in rows:
            figures.add(row)
        return figures

    def add(self, row: dict[str, Any]) -> None:
        """One row of the split (its record), counted and, if among its category's sample, kept for the probe."""
        category = row["category"]
        mine = self.categories[category]
        mine.rows += 1
        if "reviewed" in row:  # hand-made records (tests) may carry only what the production table reads
            self.reviewed[category] += row["reviewed"]
            self.accepted_by_reviewers += row["reviewed"] and category != "correct"
            self.domain_of[category] = row["domain"]
            self.domains[row["domain"] or "(none)"] += 1
            provenance = json.loads(row["provenance"])
            self.models[(provenance.get("engine", ""), provenance.get("model", ""), category,
                         provenance.get("template_hash", ""), provenance.get("output_mode", ""))] += 1
        changed = record_answer_changed(row)
        if changed is not None:
            mine.answers_found += 1
            mine.changed += changed
        mine.error_steps += len(error_steps_inside(row))
        position = relative_error_position(row)
        if position is not None:
            mine.positions.append(position)
            self.histogram[category][next(b for b in POSITION_BINS if position <= b)] += 1
        if self.cue_sample is not None:
            self._keep_for_cues(row, mine.rows)

    def _keep_for_cues(self, row: dict[str, Any], number: int) -> None:
        """A bounded heap per category of the rows with the smallest id hashes (their probe view only)."""
        from injector.triage.cues import cue_records

        cap = self.cue_sample or 0
        heap = self._sampled.setdefault(row["category"], [])
        digest = _id_hash(row)
        if len(heap) >= cap and not digest < heap[0].entry[0]:
            return
        item = _Largest((digest, number, cue_records([(row, "in_split")])[0]))
        if len(heap) < cap:
            heapq.heappush(heap, item)
        else:
            heapq.heapreplace(heap, item)

    def cue_rows(self) -> list[dict[str, Any]]:
        """The sample's probe views: all of a category's rows in their order when there are no more than the cap,
        else the cap's worth in id-hash order (what `card.cue_sample` gives on the whole list)."""
        picked: list[dict[str, Any]] = []
        for category, heap in self._sampled.items():
            entries = [item.entry for item in heap]
            over = self.categories[category].rows > (self.cue_sample or 0)
            picked.extend(view for _, _, view in sorted(entries, key=lambda e: e[0] if over else e[1]))
        return picked

    def release_sample(self) -> None:
        """Forget the sampled rows (their probe views): once probed, only the figures are needed."""
        self._sampled = {}


class _Largest:
    """A heap item ordered by the reverse of its id hash: `heapq`'s min-heap then holds the largest on top."""

    __slots__ = ("entry",)

    def __init__(self, entry: tuple[bytes, int, Any]) -> None:
        self.entry = entry

    def __lt__(self, other: _Largest) -> bool:
        return self.entry[0] > other.entry[0]
