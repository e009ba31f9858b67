"""The threshold sweep in O(n log n) gives what the former per-threshold sweep gave (kept here as the reference)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from injector.evaluate.metrics import (CORRECT, ERROR, MULTI_SOLUTION, EvalItem, candidate_thresholds, metric_value,
                                       sweep_threshold)


def quadratic_sweep(items, scores, metric):
    """The sweep as it was before issue 30: a full metric pass per candidate threshold."""
    best = (None, None)
    for threshold in candidate_thresholds(items, scores):
        value = metric_value(metric, items, scores, threshold)
        if value is not None and (best[1] is None or value > best[1]):
            best = (threshold, value)
    return best


SCORE = st.one_of(st.sampled_from([0.0, 0.25, 0.5, 0.5000000001, 0.75, 1.0]), st.floats(0, 1))


@st.composite
def an_item(draw, number: int, step_labels: bool):
    steps = draw(st.integers(1, 6))
    kind = draw(st.sampled_from([ERROR, ERROR, MULTI_SOLUTION, CORRECT]))
    category = {CORRECT: "correct", MULTI_SOLUTION: "multi_solution"}.get(kind) or draw(
        st.sampled_from(["counterfactual", "confidence", "gsm8k"]))
    errors = frozenset(draw(st.sets(st.integers(1, steps), min_size=1))) if kind == ERROR else frozenset()
    item = EvalItem(id=f"i{number}", category=category, kind=kind, steps=("s",) * steps,
                    error_steps=errors if step_labels else None, first_error=min(errors) if errors else None)
    item_scores = draw(st.one_of(st.none(), st.lists(SCORE, min_size=steps, max_size=steps)))
    if item_scores is not None and not step_labels and draw(st.booleans()):
        item_scores = item_scores + draw(st.lists(SCORE, max_size=2))  # ProcessBench reads the first len(steps)
    return item, item_scores


@st.composite
def a_split(draw):
    step_labels = draw(st.booleans())
    drawn = [draw(an_item(k, step_labels)) for k in range(draw(st.integers(0, 12)))]
    return [item for item, _ in drawn], {item.id: s for item, s in drawn}


@settings(max_examples=400, deadline=None)
@given(a_split(), st.sampled_from(["prmscore", "processbench"]))
def test_the_linear_sweep_matches_the_quadratic_one(split, metric):
    items, scores = split
    threshold, value = sweep_threshold(items, scores, metric)
    expected_threshold, expected_value = quadratic_sweep(items, scores, metric)
    assert threshold == expected_threshold
    assert (value is None) == (expected_value is None)
    if value is not None:
        assert abs(value - expected_value) <= 1e-12


def test_a_score_list_of_the_wrong_length_is_refused_as_before():
    import pytest

    items = [EvalItem(id="a", category="counterfactual", kind=ERROR, steps=("x", "y"), error_steps=frozenset({2}),
                      first_error=2)]
    with pytest.raises(ValueError):
        quadratic_sweep(items, {"a": (0.1,)}, "prmscore")
    with pytest.raises(ValueError):
        sweep_threshold(items, {"a": (0.1,)}, "prmscore")
