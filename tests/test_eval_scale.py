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
