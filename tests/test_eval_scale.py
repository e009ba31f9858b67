"""Issue 30: `inject eval` on a large split costs in proportion to the split (work counted, never timed)."""
from __future__ import annotations

import json

from injector.evaluate.metrics import CORRECT, ERROR, EvalItem
from injector.evaluate.protocols import PRMBENCH
from injector.evaluate.scorers import read_scores


def test_scores_without_the_controls_do_not_compare_every_control_with_every_other(tmp_path, monkeypatch):
    """A scores file that leaves out the correct controls (what a PRMBench export scored as PRMBench does) is
    accepted with a note. Finding that every control is missing compared each control with the list of missing
    items: 6,154 controls at 10k rows made 19M comparisons, 61k at 100k rows kept `inject eval` busy for minutes
    (bench/RESULTS.md). By id, it compares none."""
    errors = [EvalItem(id=f"{n}::circular", category="circular_logic", kind=ERROR, steps=("a", "b"),
                       error_steps=frozenset({2}), first_error=2) for n in range(50)]
    controls = [EvalItem(id=f"correct_{n}::correct", category="correct", kind=CORRECT, steps=("a", "b"))
                for n in range(200)]
    scores = tmp_path / "scores.jsonl"
    scores.write_text("".join(json.dumps({"id": item.id, "step_scores": [0.9, 0.1]}) + "\n" for item in errors))
    comparisons = []
    equal = EvalItem.__eq__

    def counting(self, other):
        comparisons.append(1)
        return equal(self, other)

    monkeypatch.setattr(EvalItem, "__eq__", counting)
    result = read_scores(scores, [*errors, *controls], PRMBENCH)
    assert set(result.scores) == {item.id for item in errors}
    assert any("no scores for the 200 correct controls" in note for note in result.notes), result.notes
    assert len(comparisons) <= len(controls), len(comparisons)


def test_the_prediction_lines_are_written_as_they_are_made_not_held(tmp_path, monkeypatch):
    """predictions.jsonl holds one line per solution (~1 KB as a dict); they were all made, then all written. Now
    each is written as it is made: while one is written, the process holds one or two, not the split's 40."""
    import gc

    import injector.evaluate.report as report
    from injector.evaluate import EvalRequest, evaluate

    steps = ["Let x = 2.", "Then x + 3 = 6.", "So the answer is 6."]
    split = tmp_path / "split"
    split.mkdir()
    (split / "circular.jsonl").write_text("".join(json.dumps(
        {"idx": f"p{n}", "classification": "circular", "original_question": "What is 2 + 3?",
         "modified_question": "What is 2 + 3?", "original_process": steps, "modified_process": steps,
         "error_steps": [2]}) + "\n" for n in range(40)))
    scores = tmp_path / "scores.jsonl"
    scores.write_text("".join(json.dumps({"id": f"p{n}::circular", "step_scores": [0.9, 0.2, 0.8]}) + "\n"
                              for n in range(40)))
    held: list[int] = []
    real = report.json

    class CountingJson:
        def __getattr__(self, name):
            return getattr(real, name)

        def dumps(self, value, **options):
            if isinstance(value, dict) and "first_error_right" in value and len(held) < 3:
                gc.collect()
                held.append(sum(isinstance(thing, dict) and "first_error_right" in thing
                                for thing in gc.get_objects()))
            return real.dumps(value, **options)

    monkeypatch.setattr(report, "json", CountingJson())
    result = evaluate(EvalRequest(split=str(split), scores=str(scores), out=str(tmp_path / "report"), plots=False))
    assert result.metrics["n_items"] == 40
    assert len((tmp_path / "report" / "predictions.jsonl").read_text().splitlines()) == 40
    assert held and max(held) <= 2, held


def test_the_precision_recall_curve_pools_the_step_scores_as_raw_doubles():
    """The curve pooled every step's score into lists: with scores held as arrays of doubles (a scores file's), each
    step became a float object and a list slot, ~32 bytes (37 MB at 100k solutions). Then 8 bytes a step and a
    sorted copy; now counted a batch at a time (`tally.AtOrBelow`). The curve itself is unchanged
    (`test_eval_metrics`)."""
    import tracemalloc
    from array import array

    from injector.evaluate.metrics import error_detection_curve

    items = [EvalItem(id=f"{n}::circular", category="circular_logic", kind=ERROR, steps=("a",) * 10,
                      error_steps=frozenset({3}), first_error=3) for n in range(2_000)]
    scores = {item.id: array("d", [(n % 97) / 97 + k / 1000 for k in range(10)]) for n, item in enumerate(items)}
    error_detection_curve(items[:10], scores, [0.5])  # numpy imported before measuring
    tracemalloc.start()
    try:
        curve = error_detection_curve(items, scores, [0.25, 0.5, 0.75])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert curve[1]["recall"] is not None
    assert peak / 20_000 < 24, peak / 20_000


def test_an_item_has_no_per_instance_dict():
    """An eval holds one `EvalItem` per solution (and per correct control): slotted, ~150 bytes less each."""
    item = EvalItem(id="1::circular", category="circular_logic", kind=ERROR, steps=("a",))
    assert not hasattr(item, "__dict__")


def test_items_without_error_steps_share_one_empty_set():
    """Each `frozenset()` is a new 216-byte object: every PRMBench correct control made two (27 MB at 100k
    solutions). Read from PRMBench's published redundancy file (tests/fixtures/prmbench, see its ATTRIBUTION.md)."""
    from pathlib import Path

    from injector.evaluate.splits import load_split

    loaded = load_split(Path(__file__).parent / "fixtures/prmbench/prm800k_train_p1_first400_4o_redundency.jsonl")
    controls = [item for item in loaded.items if item.kind == CORRECT]
    assert len(controls) > 10
    assert len({id(item.error_steps) for item in controls} | {id(item.given_error_steps) for item in controls}) == 1
