"""`Totals`: what `inject stats` reports of a group of records (a category, or all of them), summed one record at a
time, so stats holds a few numbers per category however large the run, never a row per record."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

STATUSES = ("accepted", "rejected_by_reviewer", "unreviewed", "rejected_by_validation", "in_split",
            "correct_control")
HISTOGRAM_BINS = ("0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1")


@dataclass
class _Mean:
    """A running sum and count of the values given (None ones skipped). The figures are rounded to 3 or 6 digits,
    far above a running sum's error at millions of values."""

    total: float = 0.0
    count: int = 0

    def add(self, value: float | None) -> None:
        if value is not None:
            self.total += value
            self.count += 1

    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def merge(self, other: _Mean) -> None:
        self.total += other.total
        self.count += other.count


@dataclass
class Totals:
    """One group's counts and sums; `add` takes a record's row of numbers (`stats._flat`)."""

    records: int = 0
    statuses: Counter = field(default_factory=Counter)
    in_split: int = 0
    codes: Counter = field(default_factory=Counter)
    steps: _Mean = field(default_factory=_Mean)
    error_steps: _Mean = field(default_factory=_Mean)
    answer_changed: _Mean = field(default_factory=_Mean)
    positions: _Mean = field(default_factory=_Mean)
    histogram: list[int] = field(default_factory=lambda: [0] * len(HISTOGRAM_BINS))
    tokens: int = 0
    cost: _Mean = field(default_factory=_Mean)
    cost_known: bool = True
    audit_checked: int = 0
    audit_flagged: int = 0

    def add(self, row: dict[str, Any]) -> None:
        self.records += 1
        self.statuses[row["status"]] += 1
        self.in_split += row["in_split"]
        self.codes.update(code for code in row["codes"] if code is not None)
        self.steps.add(row["steps"])
        self.error_steps.add(row["error_steps"])
        self.answer_changed.add(row["answer_changed"])
        if (position := row["position"]) is not None:
            self.positions.add(position)
            self.histogram[min(4, max(0, int((position - 1e-9) * 5)))] += 1
        self.tokens += row["tokens"]
        self.cost.add(row["cost"])
        self.cost_known = self.cost_known and row["cost_known"]
        if row["audit_flagged"] is not None:
            self.audit_checked += 1
            self.audit_flagged += row["audit_flagged"]

    def merge(self, other: Totals) -> None:
        """Add another group's totals to these (the whole run's figures from its categories')."""
        self.records += other.records
        self.statuses.update(other.statuses)
        self.in_split += other.in_split
        self.codes.update(other.codes)
        for mine, theirs in ((self.steps, other.steps), (self.error_steps, other.error_steps),
                             (self.answer_changed, other.answer_changed), (self.positions, other.positions),
                             (self.cost, other.cost)):
            mine.merge(theirs)
        self.histogram = [a + b for a, b in zip(self.histogram, other.histogram)]
        self.tokens += other.tokens
        self.cost_known = self.cost_known and other.cost_known
        self.audit_checked += other.audit_checked
        self.audit_flagged += other.audit_flagged

    def summary(self) -> dict[str, Any]:
        """The group's figures as `inject stats` prints and writes them."""
        candidates = self.records - self.statuses["rejected_by_validation"]
        return {
            "records": self.records,
            **{name: self.statuses[name] for name in STATUSES},
            "in_split": self.in_split,  # a split's rows are also accepted or unreviewed
            "reject_codes": dict(sorted(self.codes.items(), key=lambda item: (-item[1], item[0]))),
            "mean_steps": _round(self.steps.mean()),
            "mean_error_steps": _round(self.error_steps.mean()),
            "answer_changed_share": _round(self.answer_changed.mean()),
            "answer_checked": self.answer_changed.count,
            "mean_error_position": _round(self.positions.mean()),
            "error_position_histogram": dict(zip(HISTOGRAM_BINS, self.histogram)),
            "tokens": self.tokens,
            "cost": _round(self.cost.total, 6) if self.cost_known else None,
            "audit_checked": self.audit_checked,
            "audit_flagged": self.audit_flagged,
            # Dollars per candidate that passed validation, the rejects' cost included (what a usable one costs).
            "cost_per_candidate": _round(self.cost.total / candidates, 6) if self.cost_known and candidates else None,
        }


def _round(value: Any, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)
