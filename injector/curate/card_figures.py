"""`CardFigures`: what the dataset card reports of a split's rows, gathered one row at a time, so a build keeps
these aggregates (and a bounded sample for the cue probe) rather than the rows themselves."""
from __future__ import annotations

import json
from array import array
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

from injector.curate.cue_sample import CueSample

POSITION_BINS = (0.2, 0.4, 0.6, 0.8, 1.0)


def error_steps_inside(row: dict[str, Any]) -> list[int]:
    """The error step numbers that name a step of `modified_process` (published files hold some past the end)."""
    return [k for k in row["error_steps"] if isinstance(k, int) and 1 <= k <= len(row["modified_process"])]


def relative_error_position(row: dict[str, Any]) -> float | None:
    """First error step ÷ number of steps (1-based, in (0, 1]); None without an error step."""
    errors = error_steps_inside(row)
    return min(errors) / len(row["modified_process"]) if errors else None


def record_answer_changed(row: dict[str, Any], answers: tuple[Any, str | None] | None = None) -> bool | None:
    """Whether the modified solution's final answer differs from the source's (`ground_truth`, else the original
    steps' answer), by the toolkit's own extraction and equivalence; None when either answer cannot be found
    (`answers`: `exports.final_answers(row)`, when the caller has them)."""
    from injector.answer.final import answers_equivalent
    from injector.curate.exports import final_answers

    source, new = final_answers(row) if answers is None else answers
    if source is None or new is None:
        return None
    return not answers_equivalent(str(source), new)


def sampled_keys(keys: Iterable[Any], per_category: int) -> list[Any]:
    """The keys of the rows `CueSample` keeps for the probe, offered a build's row keys (their final `id` and
    `category`) in the rows' order: the same rows, in the same order, as `CardFigures.of` on their records keeps,
    so the probe can read just those rows back."""
    sample = CueSample(per_category)
    for key in keys:
        sample.offer(key.id, key.category, key)
    return sample.rows()


@dataclass
class CategoryFigures:
    """One category's rows: how many, how often the answer changed, error steps, where the first error sits."""

    rows: int = 0
    changed: int = 0
    """Rows whose final answer changed, among the `answers_found` rows where both answers were found."""
    answers_found: int = 0
    error_steps: int = 0
    positions: array = field(default_factory=lambda: array("d"))
    """First error ÷ steps per row with one (kept so the mean sums in the rows' order; 8 bytes each)."""
    _placed: tuple[array, array] = field(default_factory=lambda: (array("q"), array("d")))
    """(rows' places, positions) of rows counted out of order (`CardFigures.add` with `seq`), until `settle`."""

    def settle(self) -> None:
        """The positions of rows counted out of order appended in the rows' order."""
        import numpy

        places, positions = self._placed
        if places:  # numpy's order: no int object per row (the rows' places are unique, so any sort will do)
            order = numpy.argsort(numpy.frombuffer(places, dtype=numpy.int64))
            self.positions.frombytes(numpy.frombuffer(positions, dtype=numpy.float64)[order].tobytes())
        self._placed = (array("q"), array("d"))


@dataclass
class CardFigures:
    """The card's figures over the rows `add`ed, in the split's row order (`report.rows`); `cue_sample` rows per
    category at most are kept for the cue probe (`cue_sample.CueSample`: those with the smallest id hashes)."""

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
    _sampled: CueSample | None = None
    _domain_place: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.cue_sample is not None:
            self._sampled = CueSample(self.cue_sample)

    @classmethod
    def of(cls, rows: Iterable[dict[str, Any]], cue_sample: int | None = 5000) -> CardFigures:
        figures = cls(cue_sample=cue_sample)
        for row in rows:
            figures.add(row)
        return figures

    def add(self, row: dict[str, Any], seq: int | None = None, answers: tuple[Any, str | None] | None = None) -> None:
        """One row of the split (its record), counted and, if among its category's sample, kept for the probe.

        `seq`: the row's place in the split's order, for rows counted in another order (a build counts them as it
        writes each split): what the order decides (the positions' sum, a category's last domain) follows `seq`
        once `settle` ran, and no sample is kept (a build reads its sample back by `sampled_keys`). `answers`:
        `exports.final_answers(row)`, when the caller has them."""
        category = row["category"]
        mine = self.categories[category]
        mine.rows += 1
        if "reviewed" in row:  # hand-made records (tests) may carry only what the production table reads
            self.reviewed[category] += row["reviewed"]
            self.accepted_by_reviewers += row["reviewed"] and category != "correct"
            if seq is None or seq >= self._domain_place.get(category, -1):  # the last row's, in the rows' order
                self.domain_of[category] = row["domain"]
                self._domain_place[category] = -1 if seq is None else seq
            self.domains[row["domain"] or "(none)"] += 1
            provenance = json.loads(row["provenance"])
            self.models[(provenance.get("engine", ""), provenance.get("model", ""), category,
                         provenance.get("template_hash", ""), provenance.get("output_mode", ""))] += 1
        changed = record_answer_changed(row, answers)
        if changed is not None:
            mine.answers_found += 1
            mine.changed += changed
        mine.error_steps += len(error_steps_inside(row))
        position = relative_error_position(row)
        if position is not None:
            if seq is None:
                mine.positions.append(position)
            else:
                mine._placed[0].append(seq)
                mine._placed[1].append(position)
            self.histogram[category][next(b for b in POSITION_BINS if position <= b)] += 1
        if self._sampled is not None and seq is None:
            self._sampled.offer_lazily(row.get("id"), category, lambda: _probe_view(row))

    def settle(self) -> None:
        """Put what rows counted out of order (`add` with `seq`) gave in the rows' order."""
        for mine in self.categories.values():
            mine.settle()

    def cue_rows(self) -> list[dict[str, Any]]:
        """The sample's probe views, in the order their rows were added."""
        return [] if self._sampled is None else self._sampled.rows()

    def release_sample(self) -> None:
        """Forget the sampled rows (their probe views): once probed, only the figures are needed."""
        self._sampled = None


def _probe_view(row: dict[str, Any]) -> dict[str, Any]:
    from injector.triage.cues import cue_records

    return cue_records([(row, "in_split")])[0]
