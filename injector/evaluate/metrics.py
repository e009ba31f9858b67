"""The metrics of `inject eval`, as pure functions of labelled items and their step scores (README, "Evaluate").

- PRMBench's PRMScore: a step is *positive* when it is correct; predicted positive when its score is strictly above
  the threshold. Counts are pooled over every step of every solution (not averaged per item); F1 = 2TP/(2TP+FP+FN)
  and F1_neg = 2TN/(2TN+FN+FP) (the harmonic means of precision and recall of each class; 0 when the class has no
  true hit, null when the class is neither labelled nor predicted); PRMScore = 0.5·F1 + 0.5·F1_neg. Multi-solution
  items (every step positive) are pooled into the overall figure; their own figure is F1 alone (F1_neg null).
  Correct original solutions (control items) are reported on their own, never pooled.
- ProcessBench: a solution's label is its earliest error step (1-based) or none; a scorer's prediction is the first
  step whose score is at or below the threshold, or none. acc_error and acc_correct are the accuracies on the
  solutions with and without an error (multi-solution and control items are without); F1 is their harmonic mean;
  null when either group is empty. An invalid answer (a judge's that could not be read) is wrong here and left out
  of PRMScore.
- The threshold sweep: a deterministic 20 % of the items (by a hash of their id) is the dev subset; the threshold
  that maximises the chosen metric there is applied to the rest.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

ERROR, MULTI_SOLUTION, CORRECT = "error", "multi_solution", "correct"
"""An item's kind: a solution with error steps, a different correct solution (PRMBench's multi-solution), or a
correct original solution kept as a control."""
DEFAULT_THRESHOLD = 0.5
DEV_FRACTION = 0.2
SWEEP_METRICS = ("prmscore", "processbench")

Scores = Mapping[str, "Sequence[float] | None"]
"""Step scores per item id, each in 0..1; None for an invalid answer (counted wrong or left out, see above)."""


@dataclass(frozen=True)
class EvalItem:
    """What the metrics read of one solution of a split."""

    id: str
    category: str
    kind: str
    """ERROR, MULTI_SOLUTION or CORRECT."""
    steps: tuple[str, ...]
    question: str = ""
    error_steps: frozenset[int] | None = frozenset()
    """1-based error steps; None when the split gives only the first error (a ProcessBench file)."""
    first_error: int | None = None
    """1-based earliest error step, None for a solution without an error."""

    @property
    def step_labels(self) -> list[bool] | None:
        """Per step: True when it is correct (PRMBench's positive class); None without step labels."""
        if self.error_steps is None:
            return None
        return [k not in self.error_steps for k in range(1, len(self.steps) + 1)]


def f1_score(hits: int, false_alarms: int, misses: int) -> float | None:
    """2·hits / (2·hits + false alarms + misses): the harmonic mean of precision and recall, 0 when there is no hit,
    None when the class is neither labelled nor predicted."""
    denominator = 2 * hits + false_alarms + misses
    return None if denominator == 0 else 2 * hits / denominator


@dataclass
class StepCounts:
    """Confusion counts over pooled steps; positive = correct step."""

    tp: int = 0
    fp: int = 0
    tn: int = 0
    fn: int = 0

    def add(self, labels: Sequence[bool], predictions: Sequence[bool]) -> None:
        for label, predicted in zip(labels, predictions, strict=True):
            if label and predicted:
                self.tp += 1
            elif label:
                self.fn += 1
            elif predicted:
                self.fp += 1
            else:
                self.tn += 1

    @property
    def n_steps(self) -> int:
        return self.tp + self.fp + self.tn + self.fn

    def figures(self, *, f1_only: bool = False) -> dict[str, Any]:
        """PRMScore, F1, F1_neg and the counts; `f1_only` (multi-solution and control items, whose every step is
        positive): F1_neg is undefined (null) and PRMScore is F1 alone."""
        f1 = f1_score(self.tp, self.fp, self.fn)
        # Negative class: precision TN/(TN+FN), recall TN/(TN+FP).
        f1_neg = None if f1_only else f1_score(self.tn, self.fn, self.fp)
        if f1_only:
            prmscore = f1
        else:
            prmscore = None if f1 is None or f1_neg is None else 0.5 * f1 + 0.5 * f1_neg
        return {"prmscore": prmscore, "f1": f1, "f1_neg": f1_neg, "n_steps": self.n_steps,
                "tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn}


def predicted_positive(scores: Sequence[float], threshold: float) -> list[bool]:
    """PRMScore's prediction per step: correct when the score is strictly above the threshold."""
    return [score > threshold for score in scores]


def predicted_first_error(scores: Sequence[float], threshold: float) -> int | None:
    """ProcessBench's prediction: the first step (1-based) whose score is at or below the threshold, else None."""
    return next((k for k, score in enumerate(scores, 1) if score <= threshold), None)


def prmbench_metrics(items: Sequence[EvalItem], scores: Scores, threshold: float) -> dict[str, Any] | None:
    """PRMScore overall (error and multi-solution items pooled), per category, and of the control items apart;
    None when the items carry no step labels. Items whose scores are None (invalid answers) are left out and
    counted in `n_invalid`."""
    if not items or any(item.error_steps is None for item in items):
        return None
    overall = StepCounts()
    per_category: dict[str, StepCounts] = {}
    correct = StepCounts()
    items_of: dict[str, list[int]] = {}  # category -> [items, invalid]
    for item in items:
        tally = items_of.setdefault(item.category, [0, 0])
        tally[0] += 1
        item_scores = scores.get(item.id)
        if item_scores is None:
            tally[1] += 1
            continue
        labels = item.step_labels or []
        predictions = predicted_positive(item_scores, threshold)
        if item.kind == CORRECT:
            correct.add(labels, predictions)
            continue
        overall.add(labels, predictions)
        per_category.setdefault(item.category, StepCounts()).add(labels, predictions)
    kinds = {item.category: item.kind for item in items}

    def figures(category: str, counts: StepCounts) -> dict[str, Any]:
        n_items, n_invalid = items_of[category]
        return {**counts.figures(f1_only=kinds[category] != ERROR), "n_items": n_items, "n_invalid": n_invalid}

    pooled = [item for item in items if item.kind != CORRECT]
    correct_items = [item for item in items if item.kind == CORRECT]
    return {
        "overall": {**overall.figures(), "n_items": len(pooled),
                    "n_invalid": sum(scores.get(item.id) is None for item in pooled)},
        "per_category": {category: figures(category, per_category.get(category, StepCounts()))
                         for category in sorted(items_of) if kinds[category] != CORRECT},
        "correct": {**correct.figures(f1_only=True), "n_items": len(correct_items),
                    "n_invalid": sum(scores.get(item.id) is None for item in correct_items)}
        if correct_items else None,
    }


def _accuracy(hits: int, total: int) -> float | None:
    return hits / total if total else None


def _harmonic_mean(acc_error: float | None, acc_correct: float | None) -> float | None:
    """ProcessBench's F1: null when either group is empty, 0 when both accuracies are."""
    if acc_error is None or acc_correct is None:
        return None
    if acc_error + acc_correct == 0:
        return 0.0
    return 2 * acc_error * acc_correct / (acc_error + acc_correct)


def processbench_metrics(items: Sequence[EvalItem], scores: Scores, threshold: float) -> dict[str, Any]:
    """acc_error, acc_correct, their harmonic mean F1 (null when a group is empty), and the accuracy per category."""
    hits = {True: 0, False: 0}  # has an error -> right predictions
    totals = {True: 0, False: 0}
    per_category: dict[str, list[int]] = {}
    for item in items:
        has_error = item.first_error is not None
        item_scores = scores.get(item.id)
        right = item_scores is not None and predicted_first_error(item_scores, threshold) == item.first_error
        totals[has_error] += 1
        hits[has_error] += right
        tally = per_category.setdefault(item.category, [0, 0])
        tally[0] += right
        tally[1] += 1
    acc_error, acc_correct = _accuracy(hits[True], totals[True]), _accuracy(hits[False], totals[False])
    f1 = _harmonic_mean(acc_error, acc_correct)
    return {"f1": f1, "acc_error": acc_error, "acc_correct": acc_correct, "n_error": totals[True],
            "n_correct": totals[False],
            "per_category": {category: {"accuracy": right / n, "n": n}
                             for category, (right, n) in sorted(per_category.items())}}


def in_dev_subset(item_id: str, fraction: float = DEV_FRACTION) -> bool:
    """Whether an item is in the sweep's dev subset: SHA-256 of its id, read as a number in [0, 1), below
    `fraction` (the same items on every machine, whatever order the split lists them in)."""
    digest = hashlib.sha256(item_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def metric_value(metric: str, items: Sequence[EvalItem], scores: Scores, threshold: float) -> float | None:
    """The figure a sweep maximises: overall PRMScore, or ProcessBench's F1."""
    if metric == "prmscore":
        figures = prmbench_metrics(items, scores, threshold)
        return None if figures is None else figures["overall"]["prmscore"]
    return processbench_metrics(items, scores, threshold)["f1"]


def candidate_thresholds(items: Iterable[EvalItem], scores: Scores) -> list[float]:
    """Every threshold that splits the items' steps differently: each distinct score (it and all below it
    negative), and 0 (nothing negative unless it scored 0)."""
    values = {0.0}
    for item in items:
        values.update(scores.get(item.id) or ())
    return sorted(values)


def sweep_threshold(items: Sequence[EvalItem], scores: Scores, metric: str) -> tuple[float | None, float | None]:
    """The threshold among `candidate_thresholds` that maximises `metric` on `items` (ties: the smallest), and its
    value; (None, None) when the metric is undefined at every threshold.

    Sorts once and sweeps the thresholds in order with running counts (O(n log n) in the steps), giving the very
    figures `metric_value` gives at each threshold: the same integer counts go through the same formulas."""
    thresholds = candidate_thresholds(items, scores)
    curve = _prmscore_curve if metric == "prmscore" else _processbench_curve
    best: tuple[float | None, float | None] = (None, None)
    for threshold, value in zip(thresholds, curve(items, scores, thresholds), strict=True):
        if value is not None and (best[1] is None or value > best[1]):
            best = (threshold, value)
    return best


def _prmscore_curve(items: Sequence[EvalItem], scores: Scores, thresholds: Sequence[float]) -> list[float | None]:
    """Overall PRMScore at each of the ascending `thresholds`: a step turns from predicted positive to negative
    once the threshold reaches its score, so one pass over the steps sorted by score moves them across."""
    if not items or any(item.error_steps is None for item in items):
        return [None] * len(thresholds)
    counts = StepCounts()  # below every threshold: every step predicted positive
    steps: list[tuple[float, bool]] = []
    for item in items:
        item_scores = scores.get(item.id)
        if item.kind == CORRECT or item_scores is None:
            continue
        labels = item.step_labels or []
        if len(labels) != len(item_scores):
            raise ValueError(f"{item.id}: {len(item_scores)} scores for {len(labels)} steps")
        steps.extend(zip(item_scores, labels))
        counts.tp += sum(labels)
        counts.fp += len(labels) - sum(labels)
    steps.sort(key=lambda step: step[0])
    values: list[float | None] = []
    moved = 0
    for threshold in thresholds:
        while moved < len(steps) and steps[moved][0] <= threshold:
            if steps[moved][1]:
                counts.tp, counts.fn = counts.tp - 1, counts.fn + 1
            else:
                counts.fp, counts.tn = counts.fp - 1, counts.tn + 1
            moved += 1
        f1, f1_neg = f1_score(counts.tp, counts.fp, counts.fn), f1_score(counts.tn, counts.fn, counts.fp)
        values.append(None if f1 is None or f1_neg is None else 0.5 * f1 + 0.5 * f1_neg)  # as `figures()`
    return values


def _right_interval(item_scores: Sequence[float], first_error: int | None) -> tuple[float, float] | None:
    """The thresholds t, as [low, high), at which ProcessBench's prediction for these scores is `first_error`:
    no error needs every score above t; error step f needs its score at or below t and every earlier one above."""
    if first_error is None:
        return -math.inf, min(item_scores, default=math.inf)
    if not 1 <= first_error <= len(item_scores):
        return None
    low, high = item_scores[first_error - 1], min(item_scores[:first_error - 1], default=math.inf)
    return (low, high) if low < high else None


def _processbench_curve(items: Sequence[EvalItem], scores: Scores,
                        thresholds: Sequence[float]) -> list[float | None]:
    """ProcessBench's F1 at each of the ascending `thresholds`: each solution is predicted right on one interval
    of thresholds, so the hits at t are the intervals begun by t minus those ended by t (two sorted lists)."""
    totals = {True: 0, False: 0}
    starts: dict[bool, list[float]] = {True: [], False: []}
    ends: dict[bool, list[float]] = {True: [], False: []}
    for item in items:
        has_error = item.first_error is not None
        totals[has_error] += 1
        item_scores = scores.get(item.id)
        interval = None if item_scores is None else _right_interval(item_scores, item.first_error)
        if interval is not None:
            starts[has_error].append(interval[0])
            ends[has_error].append(interval[1])
    for group in (True, False):
        starts[group].sort()
        ends[group].sort()
    begun = {True: 0, False: 0}
    ended = {True: 0, False: 0}
    values: list[float | None] = []
    for threshold in thresholds:
        for group in (True, False):
            while begun[group] < len(starts[group]) and starts[group][begun[group]] <= threshold:
                begun[group] += 1
            while ended[group] < len(ends[group]) and ends[group][ended[group]] <= threshold:
                ended[group] += 1
        hits = {group: begun[group] - ended[group] for group in (True, False)}
        values.append(_harmonic_mean(_accuracy(hits[True], totals[True]), _accuracy(hits[False], totals[False])))
    return values


def error_detection_curve(items: Sequence[EvalItem], scores: Scores,
                          thresholds: Sequence[float]) -> list[dict[str, float | None]]:
    """Precision and recall of finding error steps (the negative class: score at or below the threshold) at each
    threshold, over the pooled steps of the error and multi-solution items with valid scores."""
    curve = []
    for threshold in thresholds:
        counts = StepCounts()
        for item in items:
            item_scores = scores.get(item.id)
            if item.kind == CORRECT or item_scores is None or item.step_labels is None:
                continue
            counts.add(item.step_labels, predicted_positive(item_scores, threshold))
        flagged, errors = counts.tn + counts.fn, counts.tn + counts.fp
        curve.append({"threshold": threshold, "precision": counts.tn / flagged if flagged else None,
                      "recall": counts.tn / errors if errors else None})
    return curve
