"""The linear-time threshold sweep gives what the quadratic definition gives: a full metric pass per candidate
threshold (kept here as the reference), on random splits and scores (hypothesis), to 1e-12."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from injector.evaluate.metrics import (CORRECT, ERROR, MULTI_SOLUTION, EvalItem, candidate_thresholds, metric_value,
                                       sweep_threshold)


def quadratic_sweep(items, scores, metric):
    """The sweep as it was: every candidate threshold, a full metric pass each."""
    best = (None, None)
    for threshold in candidate_thresholds(items, scores):
        value = metric_value(metric, items, scores, threshold)
        if value is not None and (best[1] is None or value > best[1]):
            best = (threshold, value)
    return best


# Few distinct score values, so that ties between steps and between thresholds are common.
SCORE = st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5000000001, 0.7, 0.9, 1.0]) | st.floats(0, 1)


@st.composite
def split(draw, with_labels=True):
    items, scores = [], {}
    for k in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from([ERROR, ERROR, MULTI_SOLUTION, CORRECT]))
        n_steps = draw(st.integers(0 if kind != ERROR else 1, 6))
        errors = frozenset(draw(st.sets(st.integers(1, n_steps), min_size=1))) if kind == ERROR else frozenset()
        category = {ERROR: draw(st.sampled_from(["circular_logic", "confidence"])), MULTI_SOLUTION: "multi_solution",
                    CORRECT: "correct"}[kind]
        items.append(EvalItem(id=f"i{k}", category=category, kind=kind, steps=tuple("s" * n_steps),
                              error_steps=errors if with_labels else None,
                              first_error=min(errors) if errors else None))
        # A missing answer (None), or one score per step; a ProcessBench reader may see fewer or more scores.
        length = n_steps if with_labels else draw(st.integers(0, 7))
        scores[f"i{k}"] = draw(st.none() | st.lists(SCORE, min_size=length, max_size=length).map(tuple))
    return items, scores


def same(actual, expected):
    assert actual[0] == expected[0]
    if expected[1] is None:
        assert actual[1] is None
    else:
        assert actual[1] == pytest.approx(expected[1], abs=1e-12, rel=0)


@settings(max_examples=150, deadline=None)
@given(split(), st.sampled_from(["prmscore", "processbench"]))
def test_the_linear_sweep_equals_the_quadratic_one(data, metric):
    items, scores = data
    same(sweep_threshold(items, scores, metric), quadratic_sweep(items, scores, metric))


@settings(max_examples=60, deadline=None)
@given(split(with_labels=False))
def test_the_linear_processbench_sweep_equals_the_quadratic_one_without_step_labels(data):
    items, scores = data
    same(sweep_threshold(items, scores, "processbench"), quadratic_sweep(items, scores, "processbench"))
    assert sweep_threshold(items, scores, "prmscore") == (None, None)
