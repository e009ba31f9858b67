"""`inject eval`'s formulas against figures computed by hand (exact to 1e-9); the arithmetic is in the comments.

The fixture (threshold 0.5; a step is positive when correct, predicted positive when its score is > 0.5):

  e1 circular_logic  errors {3,4}  scores .9 .8 .3 .6   labels T T F F  predicted T T F T  -> TP2 TN1 FP1
  e2 circular_logic  errors {2}    scores .4 .2         labels T F      predicted F F      -> FN1 TN1
  e3 confidence      errors {1}    scores .7 .9 .1      labels F T T    predicted T T F    -> FP1 TP1 FN1
  m1 multi_solution  no error      scores .9 .5 .95     labels T T T    predicted T F T    -> TP2 FN1  (.5 is not > .5)
  c1 correct control no error      scores .6 .9         labels T T      predicted T T      -> TP2      (not pooled)
"""
from __future__ import annotations

import hashlib
import json

import pytest

from injector.evaluate.metrics import (CORRECT, ERROR, MULTI_SOLUTION, EvalItem, error_detection_curve, f1_score,
                                       in_dev_subset, predicted_first_error, processbench_metrics, prmbench_metrics,
                                       sweep_threshold)
from injector.evaluate.report import compute_metrics
from injector.evaluate.scorers import ScorerResult
from injector.evaluate.splits import load_split


def item(item_id, category, kind, n_steps, errors=()):
    errors = frozenset(errors)
    return EvalItem(id=item_id, category=category, kind=kind, steps=tuple(f"step {k}" for k in range(1, n_steps + 1)),
                    error_steps=errors, first_error=min(errors) if errors else None)


ITEMS = [item("e1", "circular_logic", ERROR, 4, {3, 4}), item("e2", "circular_logic", ERROR, 2, {2}),
         item("e3", "confidence", ERROR, 3, {1}), item("m1", "multi_solution", MULTI_SOLUTION, 3),
         item("c1", "correct", CORRECT, 2)]
SCORES = {"e1": (0.9, 0.8, 0.3, 0.6), "e2": (0.4, 0.2), "e3": (0.7, 0.9, 0.1), "m1": (0.9, 0.5, 0.95),
          "c1": (0.6, 0.9)}


def close(actual, expected):
    assert actual == pytest.approx(expected, abs=1e-9, rel=0)


def test_prmscore_is_pooled_over_steps_not_averaged_over_items_or_categories():
    figures = prmbench_metrics(ITEMS, SCORES, 0.5)
    overall = figures["overall"]
    # Pooled over e1, e2, e3, m1: TP 2+0+1+2 = 5, FN 0+1+1+1 = 3, TN 1+1+0+0 = 2, FP 1+0+1+0 = 2; 12 steps.
    assert (overall["tp"], overall["fn"], overall["tn"], overall["fp"], overall["n_steps"]) == (5, 3, 2, 2, 12)
    close(overall["f1"], 2 / 3)          # 2*5 / (2*5 + 2 + 3) = 10/15
    close(overall["f1_neg"], 4 / 9)      # 2*2 / (2*2 + 3 + 2) = 4/9
    close(overall["prmscore"], 5 / 9)    # 0.5*2/3 + 0.5*4/9 = 1/3 + 2/9
    per_category = figures["per_category"]
    close(per_category["circular_logic"]["f1"], 2 / 3)        # TP2 FN1 FP1: 4/6
    close(per_category["circular_logic"]["f1_neg"], 2 / 3)    # TN2 FN1 FP1: 4/6
    close(per_category["circular_logic"]["prmscore"], 2 / 3)
    close(per_category["confidence"]["f1"], 1 / 2)            # TP1 FP1 FN1: 2/4
    close(per_category["confidence"]["f1_neg"], 0.0)          # TN0: no error step found
    close(per_category["confidence"]["prmscore"], 1 / 4)
    # The mean of the categories' PRMScores, (2/3 + 1/4 + 4/5)/3 = 0.5722..., is not the pooled figure.
    assert abs(overall["prmscore"] - (2 / 3 + 1 / 4 + 4 / 5) / 3) > 0.01


def test_multi_solution_is_pooled_overall_and_its_own_figure_is_f1_alone():
    multi = prmbench_metrics(ITEMS, SCORES, 0.5)["per_category"]["multi_solution"]
    assert (multi["tp"], multi["fn"], multi["n_steps"]) == (2, 1, 3)
    close(multi["f1"], 4 / 5)           # 2*2 / (2*2 + 0 + 1)
    assert multi["f1_neg"] is None      # every step is positive: F1_neg is undefined
    close(multi["prmscore"], 4 / 5)     # F1 alone
    without = prmbench_metrics([i for i in ITEMS if i.kind != MULTI_SOLUTION], SCORES, 0.5)["overall"]
    # Without m1: TP 3, FN 2, TN 2, FP 2 -> F1 6/10, F1_neg 4/8: m1's steps were in the overall figure.
    close(without["f1"], 0.6)
    close(without["f1_neg"], 0.5)


def test_correct_originals_are_reported_apart_and_not_pooled():
    figures = prmbench_metrics(ITEMS, SCORES, 0.5)
    assert "correct" not in figures["per_category"]
    correct = figures["correct"]
    assert (correct["tp"], correct["n_steps"], correct["n_items"]) == (2, 2, 1)
    close(correct["f1"], 1.0)
    assert correct["f1_neg"] is None
    # Pooled, c1 would have made TP 7 and F1 14/19; the overall figure is still 10/15 with 12 steps.
    assert figures["overall"]["n_steps"] == 12 and figures["overall"]["n_items"] == 4
    assert prmbench_metrics(ITEMS[:4], SCORES, 0.5)["correct"] is None


def test_a_score_equal_to_the_threshold_is_not_positive_and_is_an_error_for_processbench():
    assert [score > 0.5 for score in (0.5,)] == [False]
    assert predicted_first_error((0.9, 0.5, 0.95), 0.5) == 2
    assert predicted_first_error((0.9, 0.500001, 0.95), 0.5) is None
    counts = prmbench_metrics([ITEMS[3]], {"m1": (0.9, 0.5, 0.95)}, 0.5)["per_category"]["multi_solution"]
    assert counts["fn"] == 1 and counts["tp"] == 2


def test_processbench_accuracies_and_their_harmonic_mean():
    figures = processbench_metrics(ITEMS, SCORES, 0.5)
    # First step with score <= 0.5: e1 -> 3 (label 3, right); e2 -> 1 (label 2, wrong); e3 -> 3 (label 1, wrong);
    # m1 -> 2 (no error, wrong: the .5 boundary); c1 -> none (right).
    assert (figures["n_error"], figures["n_correct"]) == (3, 2)
    close(figures["acc_error"], 1 / 3)
    close(figures["acc_correct"], 1 / 2)
    close(figures["f1"], 2 / 5)         # 2 * 1/3 * 1/2 / (1/3 + 1/2) = (1/3) / (5/6)
    assert {category: {"accuracy": entry["accuracy"], "n": entry["n"]}
            for category, entry in figures["per_category"].items()} == {"circular_logic": {"accuracy": 0.5, "n": 2},
                                       "confidence": {"accuracy": 0.0, "n": 1},
                                       "correct": {"accuracy": 1.0, "n": 1},
                                       "multi_solution": {"accuracy": 0.0, "n": 1}}


def test_empty_groups_give_null_figures():
    errors_only = processbench_metrics(ITEMS[:3], SCORES, 0.5)   # PRMBench's files: no correct solution
    close(errors_only["acc_error"], 1 / 3)
    assert errors_only["acc_correct"] is None and errors_only["f1"] is None and errors_only["n_correct"] == 0
    correct_only = processbench_metrics(ITEMS[3:], SCORES, 0.5)
    close(correct_only["acc_correct"], 1 / 2)
    assert correct_only["acc_error"] is None and correct_only["f1"] is None
    assert f1_score(0, 0, 0) is None and f1_score(0, 3, 1) == 0.0


def test_an_invalid_answer_is_left_out_of_prmscore_and_wrong_for_processbench():
    scores = {**SCORES, "e1": None}
    overall = prmbench_metrics(ITEMS, scores, 0.5)["overall"]
    # Without e1: TP 0+1+2 = 3, FN 1+1+1 = 3, TN 1+0+0 = 1, FP 0+1+0 = 1; 8 steps.
    assert (overall["tp"], overall["fn"], overall["tn"], overall["fp"], overall["n_steps"]) == (3, 3, 1, 1, 8)
    close(overall["f1"], 0.6)            # 6 / (6 + 1 + 3)
    close(overall["f1_neg"], 1 / 3)      # 2 / (2 + 3 + 1)
    close(overall["prmscore"], 7 / 15)   # 0.3 + 1/6
    assert overall["n_invalid"] == 1 and overall["n_items"] == 4
    processbench = processbench_metrics(ITEMS, scores, 0.5)
    close(processbench["acc_error"], 0.0)   # e1 was the one right answer; invalid counts as wrong
    close(processbench["acc_correct"], 0.5)
    close(processbench["f1"], 0.0)


def test_processbench_labels_are_zero_based_in_processbench_files(tmp_path):
    path = tmp_path / "math.jsonl"
    records = [{"id": "a", "generator": "g", "problem": "q", "steps": ["s1", "s2", "s3"], "label": 1,
                "final_answer_correct": False},
               {"id": "b", "generator": "g", "problem": "q", "steps": ["s1", "s2"], "label": -1,
                "final_answer_correct": True},
               {"id": "c", "generator": "g", "problem": "q", "steps": ["s1", "s2"], "label": 0,
                "final_answer_correct": False}]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    loaded = load_split(path)
    assert [(i.id, i.first_error, i.kind, i.category) for i in loaded.items] == [
        ("a", 2, ERROR, "math"), ("b", None, CORRECT, "math"), ("c", 1, ERROR, "math")]
    scores = {"a": (0.9, 0.2, 0.1), "b": (0.8, 0.9), "c": (0.3, 0.9)}
    result = compute_metrics(loaded.items, ScorerResult(scores=scores, scorer={"kind": "scores"}), threshold=0.5)
    assert result["prmbench"] is None      # only the first error is labelled
    assert (result["processbench"]["acc_error"], result["processbench"]["acc_correct"]) == (1.0, 1.0)
    # Read 1-based, "label": 1 would have been step 1 and a's prediction (step 2) wrong.
    wrong = compute_metrics(loaded.items, ScorerResult(scores={**scores, "a": (0.2, 0.9, 0.9)}, scorer={}),
                            threshold=0.5)["processbench"]
    close(wrong["acc_error"], 0.5)


def test_the_dev_subset_is_a_hash_of_the_id():
    for item_id in ("e1", "x::circular_logic::0", "prm_test_p1_0::circular"):
        unit = int.from_bytes(hashlib.sha256(item_id.encode()).digest()[:8], "big") / 2**64
        assert in_dev_subset(item_id) == (unit < 0.2)
    share = sum(in_dev_subset(f"item-{k}") for k in range(2000)) / 2000
    assert 0.17 < share < 0.23


def test_the_sweep_chooses_on_dev_and_reports_the_held_out_rest():
    # Every item: step 1 correct, step 2 an error. Dev items score (.9, .7), held-out ones (.9, .75).
    items = [item(f"item-{k}", "circular_logic", ERROR, 2, {2}) for k in range(40)]
    dev = [i for i in items if in_dev_subset(i.id)]
    assert 0 < len(dev) < len(items)
    scores = {i.id: (0.9, 0.7) if in_dev_subset(i.id) else (0.9, 0.75) for i in items}
    # Candidates 0, .7, .9: at 0 nothing is negative (F1_neg 0); at .7 all dev steps are right (PRMScore 1, .7
    # itself being negative); at .9 everything is negative (F1 0).
    assert sweep_threshold(dev, scores, "prmscore") == (0.7, 1.0)
    report = compute_metrics(items, ScorerResult(scores=scores, scorer={}), threshold=0.5, sweep_metric="prmscore")
    assert report["threshold"] == 0.7
    close(report["sweep"]["dev"]["prmbench"]["overall"]["prmscore"], 1.0)
    assert report["sweep"]["held_out"]["n_items"] == len(items) - len(dev)
    # Held out at .7: every step predicted positive -> TP = FP = n, F1 = 2n/3n = 2/3, F1_neg = 0, PRMScore 1/3.
    close(report["prmbench"]["overall"]["prmscore"], 1 / 3)
    assert report["prmbench"]["overall"]["n_items"] == len(items) - len(dev)


def test_the_error_detection_curve():
    curve = error_detection_curve(ITEMS, SCORES, [0.5])
    # At .5, negatives predicted: e1 step 3 (error), e2 steps 1 (correct) and 2 (error), e3 step 3 (correct), m1
    # step 2 (correct): 5 flagged (TN 2 + FN 3, as pooled above), 2 of them errors; errors: e1 3, 4, e2 2, e3 1
    # -> 2 of 4 found (TN 2 / (TN 2 + FP 2)). c1 is left out.
    close(curve[0]["precision"], 2 / 5)
    close(curve[0]["recall"], 2 / 4)


def prmbench_record(idx, classification, steps, errors):
    return {"original_question": "q", "modified_question": f"q {idx}", "original_process": steps,
            "modified_process": steps, "modified_steps": errors, "error_steps": errors, "reason": "", "idx": idx,
            "question": "q", "classification": classification}


def test_prmbench_error_steps_past_the_last_step_are_dropped_and_counted(tmp_path):
    path = tmp_path / "circular.jsonl"
    records = [prmbench_record("p0", "circular", ["s1", "s2", "s3"], [2, 9]),
               prmbench_record("p1", "circular", ["s1", "s2"], [5]),       # no error step left: its label is unknown
               prmbench_record("p0", "redundency", ["s1", "s2"], [2]),     # the same idx in another category
               prmbench_record("p2", "multi_solutions", ["s1"], [])]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    loaded = load_split(path, protocol="strict")
    assert [(i.id, i.category, i.kind, i.error_steps) for i in loaded.items] == [
        ("p0::circular", "circular_logic", ERROR, frozenset({2})),
        ("p0::redundency", "redundancy", ERROR, frozenset({2})),
        ("p2::multi_solutions", "multi_solution", MULTI_SOLUTION, frozenset())]
    assert loaded.dropped_error_steps == 2 and loaded.excluded == [f"{path}:2"]
    assert "2 error step numbers past the last step dropped" in loaded.describe()


@pytest.mark.parametrize("records, message", [
    ([prmbench_record("p0", "circular", ["s1"], [1]), prmbench_record("p0", "circular", ["s1"], [1])],
     "split.jsonl:2: id 'p0::circular' again (first at {path}:1); ids must be unique"),
    ([prmbench_record("p0", "multi_solutions", ["s1", "s2"], [2])],
     "split.jsonl:1: a multi-solution solution with error steps [2]"),
    ([prmbench_record("p0", "circular", ["s1"], [True])], "split.jsonl:1: `error_steps` must be a list of step numbers"),
    ([{"id": "x", "steps": ["a", "b"], "label": 2}], "split.jsonl:1: `label` must be the 0-based index of the first "
                                                     "wrong step (0..1) or -1 for none, found 2"),
    ([{"unknown": 1}], "split.jsonl:1: not a split record"),
])
def test_a_bad_split_is_one_error_naming_file_and_line(tmp_path, records, message):
    from injector.util.errors import InputError

    path = tmp_path / "split.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    with pytest.raises(InputError) as error:
        load_split(path, protocol="strict")
    assert str(error.value).startswith(f"{tmp_path}/" + message.format(path=path))


def test_the_error_detection_curve_equals_a_pass_per_threshold():
    """The sorted sweep (issue 30: a pass over every item per threshold took 35 s of 66 at 5k solutions) gives, at
    every threshold, the counts `item_vector` gives."""
    import random

    from injector.evaluate.metrics import item_vector
    from injector.evaluate.protocols import LabelRule

    rng = random.Random(3)
    items, scores = [], {}
    for n in range(300):
        size = rng.randint(1, 8)
        errors = frozenset(k for k in range(1, size + 1) if rng.random() < 0.3)
        kind = rng.choice([ERROR, ERROR, MULTI_SOLUTION, CORRECT]) if errors else rng.choice([MULTI_SOLUTION, CORRECT])
        errors = errors if kind == ERROR else frozenset()
        items.append(EvalItem(id=f"i{n}", category=rng.choice("ab"), kind=kind, steps=("s",) * size,
                              error_steps=errors, first_error=min(errors) if errors else None))
        scores[f"i{n}"] = None if rng.random() < 0.05 else [rng.choice([0.0, 0.25, 0.5, rng.random(), 1.0])
                                                             for _ in range(size)]
    thresholds = [k / 20 for k in range(21)]
    for point in error_detection_curve(items, scores, thresholds):
        rule = LabelRule("threshold", point["threshold"])
        tp, fp, tn, fn = [sum(column) for column in zip(*(item_vector(item, scores, rule)[:4] for item in items
                                                             if item.kind != CORRECT))]
        assert point["precision"] == (tn / (tn + fn) if tn + fn else None)
        assert point["recall"] == (tn / (tn + fp) if tn + fp else None)
