"""How much reviewers agree (`inject review RUN --agreement`): Krippendorff's alpha and pairwise Cohen's kappa.

Three things are compared, per category and overall, each with a bootstrap interval over candidates:
- the decision (accept or reject), nominal;
- the first error step a decision implies, nominal: for an accept the first of its error steps (as corrected, else
  the candidate's own; 0 when it marks none), for a reject its own value (-1: no usable error step);
- per step, whether it is an error step (accepts only: a reject says nothing about the steps).
Alpha comes from the `krippendorff` package, kappa from scikit-learn's `cohen_kappa_score`: nothing is re-derived.
Only each reviewer's latest review decision counts (adjudications and gold items are left out).
"""
from __future__ import annotations

import math
import warnings
from itertools import combinations
from pathlib import Path

import numpy as np
from pydantic import BaseModel

from injector.records.directory import RunDirectory
from injector.records.models import Candidate

MEASURES = ("decision", "first_error_step", "step_error")
BOOTSTRAP = 1000
REJECTED = -1
"""The first-error-step value of a rejection."""


class Figure(BaseModel):
    """One agreement figure with its 95 % bootstrap interval (nan when the data cannot give one)."""

    measure: str
    category: str
    statistic: str
    """`alpha`, or `kappa ann/bo` for a pair of reviewers."""
    value: float
    low: float
    high: float
    units: int
    """Candidates with at least two decisions (for kappa: decided by both)."""


class Rated(BaseModel):
    """One candidate's decisions, reviewer -> (decision value, first error step value, error flag per step)."""

    category: str
    steps: int
    decision: dict[str, int]
    first: dict[str, int]
    flags: dict[str, list[int]]


def rated_candidates(run_dirs: list[Path]) -> list[Rated]:
    """Every candidate of the runs with each reviewer's latest review decision (candidates none decided: out)."""
    from injector.curate.review.store import ReviewStore, latest_per_reviewer

    found = []
    for run_dir in map(Path, run_dirs):
        if not (run_dir / "review.sqlite").exists():
            continue
        per = latest_per_reviewer(ReviewStore(run_dir).rows())
        for candidate in RunDirectory(run_dir).candidates():
            if candidate.id in per:
                found.append(_rated(candidate, per[candidate.id]))
    return found


def _rated(candidate: Candidate, decisions: dict) -> Rated:
    rated = Rated(category=candidate.category, steps=len(candidate.modified_process), decision={}, first={},
                  flags={})
    for reviewer, decision in decisions.items():
        accepted = decision.decision == "accept"
        rated.decision[reviewer] = int(accepted)
        if not accepted:
            rated.first[reviewer] = REJECTED
            continue
        marked = set(decision.corrected_error_steps if decision.corrected_error_steps is not None
                     else candidate.error_steps)
        rated.first[reviewer] = min(marked, default=0)
        rated.flags[reviewer] = [int(step in marked) for step in range(1, rated.steps + 1)]
    return rated


def _matrix(items: list[Rated], measure: str, reviewers: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Reviewers x units, nan where a reviewer gave no value (the `krippendorff` package's reliability data), and
    each item's columns (one per step for `step_error`, else one), so a resample of items picks its columns."""
    columns: list[list[float]] = []
    owned = []
    for item in items:
        first = len(columns)
        if measure == "step_error":
            columns.extend([[item.flags[r][s] if r in item.flags else math.nan for r in reviewers]
                            for s in range(item.steps)])
        else:
            values = item.decision if measure == "decision" else item.first
            columns.append([values.get(r, math.nan) for r in reviewers])
        owned.append(np.arange(first, len(columns)))
    if not columns:
        return np.empty((len(reviewers), 0)), owned
    return np.array(columns, dtype=float).T, owned


def _alpha_of(data: np.ndarray) -> float:
    import krippendorff

    present = ~np.isnan(data)
    if data.size == 0 or present.sum(axis=0).max(initial=0) < 2 or len(np.unique(data[present])) < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def _kappa_of(data: np.ndarray) -> float:
    from sklearn.metrics import cohen_kappa_score

    both = ~np.isnan(data).any(axis=0)
    first, second = data[0, both], data[1, both]
    if both.sum() < 2 or len(np.unique(np.concatenate([first, second]))) < 2:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 0/0 when both gave one label throughout: nan
        return float(cohen_kappa_score(first, second))


def _kappa_resampled(data: np.ndarray) -> float:
    """Cohen's kappa as `cohen_kappa_score` computes it (unweighted: from the confusion matrix), without its input
    checks, which cost 2 ms a call: the bootstrap's thousands of resamples use this (tests check it equals it)."""
    both = ~np.isnan(data).any(axis=0)
    first, second = data[0, both], data[1, both]
    labels, codes = np.unique(np.concatenate([first, second]), return_inverse=True)
    if both.sum() < 2 or len(labels) < 2:
        return math.nan
    confusion = np.zeros((len(labels), len(labels)))
    np.add.at(confusion, (codes[:len(first)], codes[len(first):]), 1)
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / confusion.sum()
    observed_disagreement = confusion.sum() - np.trace(confusion)
    expected_disagreement = expected.sum() - np.trace(expected)
    return math.nan if expected_disagreement == 0 else float(1 - observed_disagreement / expected_disagreement)


def alpha(items: list[Rated], measure: str, reviewers: list[str]) -> float:
    """Krippendorff's alpha (nominal) of `measure` over `items`; nan when it is undefined (fewer than two values,
    or no unit with two decisions)."""
    return _alpha_of(_matrix(items, measure, reviewers)[0])


def kappa(items: list[Rated], measure: str, pair: tuple[str, str]) -> tuple[float, int]:
    """Cohen's kappa of two reviewers on `measure` over the items both decided, and how many those are."""
    both = [i for i in items if all(r in i.decision for r in pair)]
    return _kappa_of(_matrix(both, measure, list(pair))[0]), len(both)


def _estimate(items: list[Rated], measure: str, reviewers: list[str], rounds: int, seed: int,
              statistic, resampled=None) -> tuple[float, float, float]:
    """`statistic` of the items' matrix, and the 2.5 and 97.5 percentiles of `resampled` (default: the same
    statistic) over `rounds` resamples of the items (with replacement): the matrix is built once, a resample only
    picks its columns."""
    data, owned = _matrix(items, measure, reviewers)
    value = statistic(data)
    statistic = resampled or statistic
    if not items:
        return value, math.nan, math.nan
    generator = np.random.default_rng(seed)
    values = []
    for _ in range(rounds):
        picked = np.concatenate([owned[k] for k in generator.integers(0, len(items), len(items))])
        estimate = statistic(data[:, picked])
        if not math.isnan(estimate):
            values.append(estimate)
    if not values:
        return value, math.nan, math.nan
    low, high = np.percentile(values, [2.5, 97.5])
    return value, float(low), float(high)


def agreement(items: list[Rated], *, rounds: int = BOOTSTRAP, seed: int = 0, pairs: bool = True) -> list[Figure]:
    """Alpha and (with `pairs`) pairwise kappa of every measure, overall and per category, each with its bootstrap
    interval."""
    figures = []
    groups = {"all": items, **{c: [i for i in items if i.category == c]
                               for c in sorted({i.category for i in items})}}
    for category, group in groups.items():
        reviewers = sorted({r for item in group for r in item.decision})
        paired = [i for i in group if len(i.decision) >= 2]
        for measure in MEASURES:
            value, low, high = _estimate(paired, measure, reviewers, rounds, seed, _alpha_of)
            figures.append(Figure(measure=measure, category=category, statistic="alpha", value=value, low=low,
                                  high=high, units=len(paired)))
            for pair in combinations(reviewers, 2) if pairs else []:
                both = [i for i in group if all(r in i.decision for r in pair)]
                value, low, high = _estimate(both, measure, list(pair), rounds, seed, _kappa_of, _kappa_resampled)
                figures.append(Figure(measure=measure, category=category, statistic=f"kappa {pair[0]}/{pair[1]}",
                                      value=value, low=low, high=high, units=len(both)))
    return figures


def _number(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.3f}"


def agreement_table(figures: list[Figure]) -> list[str]:
    """The figures as aligned text lines, one per figure."""
    lines = [f"{'category':24} {'measure':17} {'statistic':20} {'value':>7} {'95% interval':>17} {'units':>6}"]
    for f in figures:
        interval = f"[{_number(f.low)}, {_number(f.high)}]"
        lines.append(f"{f.category[:24]:24} {f.measure:17} {f.statistic[:20]:20} {_number(f.value):>7} "
                     f"{interval:>17} {f.units:6d}")
    return lines


def print_agreement(run_dirs: list[Path], *, seed: int = 0, rounds: int = BOOTSTRAP) -> None:
    """`inject review --agreement`: the agreement table, then each planned reviewer's gold accuracy."""
    import click

    from injector.curate.review.gold import GOLD_THRESHOLD, gold_scores

    items = rated_candidates(run_dirs)
    click.echo(f"{len(items)} reviewed candidates, {sum(len(i.decision) >= 2 for i in items)} with two or more "
               f"reviewers (bootstrap: {rounds} resamples of the candidates, seed {seed})")
    for line in agreement_table(agreement(items, rounds=rounds, seed=seed)):
        click.echo(line)
    for run_dir in run_dirs:
        for score in gold_scores(Path(run_dir)):
            accepted = f"first error step {score.first_step_right}/{score.accepted_gold}, error steps " \
                       f"{score.steps_right}/{score.accepted_gold}" if score.accepted_gold else "no gold error accepted"
            flag = f"  FLAGGED: below {GOLD_THRESHOLD:.0%}" if score.flagged else ""
            click.echo(f"{run_dir}: gold, {score.reviewer}: decision {score.decision_right}/{score.answered} "
                       f"({_number(score.accuracy)}), {accepted}{flag}")
