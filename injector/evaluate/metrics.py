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

import bisect
import hashlib
import math
from itertools import compress
from array import array
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from injector.evaluate.tally import AtOrBelow
from injector.evaluate.protocols import NO_HIT_F1, PRMBENCH, STRICT, LabelRule, class_f1

ERROR, MULTI_SOLUTION, CORRECT = "error", "multi_solution", "correct"
"""An item's kind: a solution with error steps, a different correct solution (PRMBench's multi-solution), or a
correct original solution kept as a control."""
DEFAULT_THRESHOLD = 0.5
REDUNDANCY_CATEGORIES = frozenset({"redundancy", "circular_logic", "redundency", "circular"})
"""Categories (ours and PRMBench's names) whose labels come from redundancy scores when a scorer gives them."""
DEV_FRACTION = 0.2
SWEEP_METRICS = ("prmscore", "processbench")

Scores = Mapping[str, "Sequence[float] | None"]
"""Step scores per item id, each in 0..1; None for an invalid answer (counted wrong or left out, see above)."""


@dataclass(frozen=True, slots=True)
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
    given_error_steps: frozenset[int] | None = None
    """The error step numbers as a PRMBench file gives them, past the last step included (prmbench protocol)."""

    @property
    def step_labels(self) -> list[bool] | None:
        """Per step: True when it is correct (PRMBench's positive class); None without step labels."""
        if self.error_steps is None:
            return None
        return [k not in self.error_steps for k in range(1, len(self.steps) + 1)]


def f1_score(hits: int, false_alarms: int, misses: int) -> float | None:
    """2·hits / (2·hits + false alarms + misses): the harmonic mean of precision and recall, 0 when there is no hit,
    None when the class is neither labelled nor predicted."""
    return class_f1(hits, false_alarms, misses, STRICT)


VECTOR = ("tp", "fp", "tn", "fn", "n_items", "n_invalid", "error_right", "n_error", "correct_right", "n_correct")
"""What one solution adds to its category's totals: PRMScore's step counts (positive = correct step), whether it was
invalid, and ProcessBench's tallies (right first-error predictions among solutions with and without an error)."""


def _threshold_rule(threshold: float, rule: LabelRule | None) -> LabelRule:
    return rule if rule is not None else LabelRule("threshold", threshold)


def item_vector(item: EvalItem, scores: Scores, rule: LabelRule, protocol: str = STRICT,
                redundancy: Scores | None = None) -> list[int]:
    """One solution's contribution (VECTOR's fields). prmbench: PRMBench's loop over the model's labels (one more
    label than steps is consumed), a step's reference being "its number is not among the error steps as given"
    (an error step past the last never matches); redundancy scores replace step scores for the two redundancy
    categories. strict: one label per step, against the split's labels."""
    vector = [0] * len(VECTOR)
    vector[4] = 1
    has_error = item.first_error is not None
    vector[7 if has_error else 9] = 1
    item_scores = scores.get(item.id)
    if item_scores is None:
        vector[5] = 1
        return vector
    step_scores = item_scores
    if redundancy and item.category in REDUNDANCY_CATEGORIES and redundancy.get(item.id) is not None:
        step_scores = redundancy[item.id] or ()
    predictions = rule.labels(step_scores)
    if item.error_steps is not None:
        given = item.given_error_steps if protocol == PRMBENCH and item.given_error_steps is not None \
            else item.error_steps
        references = [k not in given for k in range(1, len(predictions) + 1)] if protocol == PRMBENCH \
            else item.step_labels or []
        for reference, predicted in zip(references, predictions, strict=True):
            vector[(0 if predicted else 3) if reference else (1 if predicted else 2)] += 1
    first = next((k for k, ok in enumerate(rule.labels(item_scores)[:len(item.steps)], 1) if not ok), None)
    if first == item.first_error:
        vector[6 if has_error else 8] = 1
    return vector


def category_totals(items: Sequence[EvalItem], vectors: Sequence[Sequence[int]]) -> dict[str, list[int]]:
    """The item vectors summed per category."""
    totals: dict[str, list[int]] = {}
    for item, vector in zip(items, vectors, strict=True):
        total = totals.setdefault(item.category, [0] * len(VECTOR))
        for k, value in enumerate(vector):
            total[k] += value
    return totals


def _sum(vectors: Iterable[Sequence[int]]) -> list[int]:
    total = [0] * len(VECTOR)
    for vector in vectors:
        for k, value in enumerate(vector):
            total[k] += value
    return total


def step_figures(total: Sequence[int], *, f1_only: bool, protocol: str = STRICT) -> dict[str, Any]:
    """PRMScore, F1, F1_neg and the counts of a VECTOR total; `f1_only` (multi-solution and control items, whose
    every step is positive): F1_neg is undefined (null) and PRMScore is F1 alone. `no_hit`: the classes whose F1
    is PRMBench's -1 (prmbench protocol)."""
    tp, fp, tn, fn = total[:4]
    f1 = class_f1(tp, fp, fn, protocol)
    # Negative class: precision TN/(TN+FN), recall TN/(TN+FP).
    f1_neg = None if f1_only else class_f1(tn, fn, fp, protocol)
    if f1_only:
        prmscore = f1
    else:
        prmscore = None if f1 is None or f1_neg is None else 0.5 * f1 + 0.5 * f1_neg
    figures: dict[str, Any] = {"prmscore": prmscore, "f1": f1, "f1_neg": f1_neg, "n_steps": tp + fp + tn + fn,
               "tp": tp, "fp": fp, "tn": tn, "fn": fn, "n_items": total[4], "n_invalid": total[5]}
    if protocol == PRMBENCH:
        figures["no_hit"] = [name for name, value in (("f1", f1), ("f1_neg", f1_neg)) if value == NO_HIT_F1]
    return figures


def prmbench_from_totals(totals: Mapping[str, Sequence[int]], kinds: Mapping[str, str],
                         protocol: str = STRICT) -> dict[str, Any]:
    """PRMScore overall (error and multi-solution categories pooled over steps), per category, and of the control
    items apart."""
    pooled = [total for category, total in totals.items() if kinds[category] != CORRECT]
    controls = [total for category, total in totals.items() if kinds[category] == CORRECT]
    return {
        "overall": step_figures(_sum(pooled), f1_only=False, protocol=protocol),
        "per_category": {category: step_figures(total, f1_only=kinds[category] != ERROR, protocol=protocol)
                         for category, total in sorted(totals.items()) if kinds[category] != CORRECT},
        "correct": step_figures(_sum(controls), f1_only=True, protocol=protocol) if controls else None,
    }


def accuracy_figures(total: Sequence[int]) -> dict[str, Any]:
    """ProcessBench's acc_error, acc_correct and F1 (their harmonic mean) of a VECTOR total, as its run_eval.py
    computes them: null when a group is empty; F1 null and `f1_undefined` when both accuracies are 0 (its NaN)."""
    error_right, n_error, correct_right, n_correct = total[6:10]
    acc_error, acc_correct = _accuracy(error_right, n_error), _accuracy(correct_right, n_correct)
    undefined = acc_error == 0 and acc_correct == 0
    if acc_error is None or acc_correct is None or undefined:
        f1 = None
    else:
        f1 = 2 * acc_error * acc_correct / (acc_error + acc_correct)
    n = total[4]
    return {"f1": f1, "acc_error": acc_error, "acc_correct": acc_correct, "n_error": n_error, "n_correct": n_correct,
            "accuracy": (error_right + correct_right) / n if n else None, "n": n, "f1_undefined": undefined}


def processbench_from_totals(totals: Mapping[str, Sequence[int]], *, subsets: bool = False) -> dict[str, Any]:
    """Pooled acc_error, acc_correct and F1 over every solution, the same per category; with `subsets` (ProcessBench
    files, one per subset) the mean of the per-subset F1s, as the paper's "average" (null when one is undefined)."""
    figures = accuracy_figures(_sum(totals.values()))
    figures["per_category"] = {category: accuracy_figures(total) for category, total in sorted(totals.items())}
    if subsets:
        f1s = [entry["f1"] for entry in figures["per_category"].values()]
        figures["average_f1"] = None if any(f1 is None for f1 in f1s) or not f1s else sum(f1s) / len(f1s)
    return figures


def predicted_positive(scores: Sequence[float], threshold: float) -> list[bool]:
    """PRMScore's prediction per step: correct when the score is strictly above the threshold."""
    return [score > threshold for score in scores]


def predicted_first_error(scores: Sequence[float], threshold: float) -> int | None:
    """ProcessBench's prediction: the first step (1-based) whose score is at or below the threshold, else None."""
    return next((k for k, score in enumerate(scores, 1) if score <= threshold), None)


def prmbench_metrics(items: Sequence[EvalItem], scores: Scores, threshold: float, *, rule: LabelRule | None = None,
                     protocol: str = STRICT, redundancy: Scores | None = None) -> dict[str, Any] | None:
    """PRMScore overall (error and multi-solution items pooled), per category, and of the control items apart;
    None when the items carry no step labels. Items whose scores are None (invalid answers) are left out and
    counted in `n_invalid`."""
    if not items or any(item.error_steps is None for item in items):
        return None
    label_rule = _threshold_rule(threshold, rule)
    vectors = [item_vector(item, scores, label_rule, protocol, redundancy) for item in items]
    return prmbench_from_totals(category_totals(items, vectors), {item.category: item.kind for item in items},
                                protocol)


def _accuracy(hits: int, total: int) -> float | None:
    return hits / total if total else None


def processbench_metrics(items: Sequence[EvalItem], scores: Scores, threshold: float, *,
                         rule: LabelRule | None = None) -> dict[str, Any]:
    """acc_error, acc_correct, their harmonic mean F1 (null when a group is empty), pooled and per category (per
    subset file for ProcessBench's files, with their mean)."""
    label_rule = _threshold_rule(threshold, rule)
    vectors = [item_vector(item, scores, label_rule) for item in items]
    subsets = bool(items) and all(item.error_steps is None for item in items)
    return processbench_from_totals(category_totals(items, vectors), subsets=subsets)


def in_dev_subset(item_id: str, fraction: float = DEV_FRACTION) -> bool:
    """Whether an item is in the sweep's dev subset: SHA-256 of its id, read as a number in [0, 1), below
    `fraction` (the same items on every machine, whatever order the split lists them in)."""
    digest = hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).digest()
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

    The value at every threshold comes from one sort and running counts (`sweep_values`), O(n log n), the same
    figures `metric_value` gives at each threshold (which would cost a full pass per threshold)."""
    thresholds = candidate_thresholds(items, scores)
    best: tuple[float | None, float | None] = (None, None)
    for threshold, value in zip(thresholds, sweep_values(items, scores, metric, thresholds)):
        if value is not None and (best[1] is None or value > best[1]):
            best = (threshold, value)
    return best


def sweep_values(items: Sequence[EvalItem], scores: Scores, metric: str,
                 thresholds: Sequence[float]) -> list[float | None]:
    """`metric_value(metric, items, scores, t)` for every t of the ascending `thresholds`, in one pass."""
    for item in items:  # the per-threshold pass refuses a score list whose length is not the steps' (zip strict)
        item_scores = scores.get(item.id)
        if item.error_steps is not None and item_scores is not None and len(item_scores) != len(item.steps):
            item_vector(item, scores, LabelRule("threshold", DEFAULT_THRESHOLD))
    if metric == "prmscore":
        if not items or any(item.error_steps is None for item in items):
            return [None] * len(thresholds)
        return _prmscore_sweep(items, scores, thresholds)
    return _processbench_sweep(items, scores, thresholds)


def _prmscore_sweep(items: Sequence[EvalItem], scores: Scores, thresholds: Sequence[float]) -> list[float | None]:
    """Overall PRMScore per threshold: a step is predicted positive when its score is above the threshold, so
    TP(t) = correct steps scoring above t, FP(t) = error steps scoring above t (pooled: error and multi-solution
    categories, as `prmbench_from_totals`)."""
    kinds = {item.category: item.kind for item in items}
    correct_steps, error_steps = _pooled_step_scores(
        (item.step_labels, scores.get(item.id)) for item in items if kinds[item.category] != CORRECT)
    values: list[float | None] = []
    for threshold in thresholds:
        tp = len(correct_steps) - _at_or_below(correct_steps, threshold)
        fp = len(error_steps) - _at_or_below(error_steps, threshold)
        total = [tp, fp, len(error_steps) - fp, len(correct_steps) - tp] + [0] * (len(VECTOR) - 4)
        values.append(step_figures(total, f1_only=False)["prmscore"])
    return values


def _processbench_sweep(items: Sequence[EvalItem], scores: Scores,
                        thresholds: Sequence[float]) -> list[float | None]:
    """ProcessBench's F1 per threshold. A solution's first-error prediction is right on an interval of
    thresholds: with an error at step f, from its score s_f up to (not including) the lowest score before f;
    without one, below its lowest score. Each interval is added to a difference array over the thresholds."""
    size = len(thresholds)
    error_right, correct_right = [0] * (size + 1), [0] * (size + 1)
    n_error = n_correct = 0
    for item in items:
        has_error = item.first_error is not None
        n_error, n_correct = n_error + has_error, n_correct + (not has_error)
        item_scores = scores.get(item.id)
        if item_scores is None:
            continue
        shown = list(item_scores[:len(item.steps)])
        if has_error:
            first = item.first_error or 0
            if first > len(shown):
                continue
            low, high = shown[first - 1], min(shown[:first - 1], default=math.inf)
        else:
            low, high = -math.inf, min(shown, default=math.inf)
        start, end = bisect.bisect_left(thresholds, low), bisect.bisect_left(thresholds, high)
        if start < end:
            tally = error_right if has_error else correct_right
            tally[start] += 1
            tally[end] -= 1
    values: list[float | None] = []
    running_error = running_correct = 0
    for index in range(size):
        running_error += error_right[index]
        running_correct += correct_right[index]
        total = [0] * 6 + [running_error, n_error, running_correct, n_correct]
        values.append(accuracy_figures(total)["f1"])
    return values


def error_detection_curve(items: Sequence[EvalItem], scores: Scores,
                          thresholds: Sequence[float]) -> list[dict[str, float | None]]:
    """Precision and recall of finding error steps (the negative class: score at or below the threshold) at each
    threshold, over the pooled steps of the error and multi-solution items with valid scores.

    The steps are counted per threshold as they come, a few thousand at a time (`AtOrBelow`): O(steps ·
    log thresholds), and memory for the thresholds, not a copy of every step's score (16 bytes a step at the
    peak, once pooled and sorted: 77 MB at 300k solutions)."""
    of_correct, of_errors = AtOrBelow(thresholds), AtOrBelow(thresholds)
    for item in items:
        labels, item_scores = item.step_labels, scores.get(item.id) if item.kind != CORRECT else None
        if labels is None or item_scores is None:
            continue
        of_correct.extend(compress(item_scores, labels))
        of_errors.extend(compress(item_scores, [not reference for reference in labels]))
    found_at, correct_at = of_errors.counts(), of_correct.counts()
    curve = []
    for threshold, found, correct in zip(thresholds, found_at, correct_at):
        flagged = correct + found
        curve.append({"threshold": threshold, "precision": found / flagged if flagged else None,
                      "recall": found / of_errors.total if of_errors.total else None})
    return curve


def _pooled_step_scores(pairs: Iterable[tuple[list[bool] | None, Sequence[float] | None]]) -> tuple[Any, Any]:
    """The scores of the correct steps and of the error steps, each sorted (numpy arrays), pooled over (step
    labels, scores) pairs; a pair without either is left out. Gathered as raw doubles (8 bytes a step, not a float
    object and a list slot: 37 MB against 12 MB at 100k solutions)."""
    import numpy as np

    correct, error = array("d"), array("d")
    for labels, item_scores in pairs:
        if labels is None or item_scores is None:
            continue
        for reference, score in zip(labels, item_scores):
            (correct if reference else error).append(score)
    return np.sort(np.frombuffer(correct)), np.sort(np.frombuffer(error))


def _at_or_below(ordered: Any, threshold: float) -> int:
    """How many of the sorted scores are at or below `threshold` (`bisect_right`)."""
    return int(ordered.searchsorted(threshold, side="right"))
