"""The processbench record format: the all-correct solutions (label -1) of ProcessBench-style records."""
from __future__ import annotations

import json
import re

import pytest

from injector.sources import detect_format, load_trajectories
from injector.util.errors import InputError

STEPS = ["We need 2 + 3.", "2 + 3 = 5, so the answer is $\\boxed{5}$."]


def record(label: int, **extra) -> dict:
    return {"id": "gsm8k-0", "generator": "a-model", "problem": "What is 2 + 3?", "steps": STEPS,
            "final_answer_correct": label == -1, "label": label, **extra}


def write(tmp_path, records: list[dict]):
    path = tmp_path / "processbench.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in records), encoding="utf-8")
    return path


def test_only_the_all_correct_solutions_are_read(tmp_path):
    wrong_answer = record(-1, id="gsm8k-2", final_answer_correct=False)
    source = load_trajectories(write(tmp_path, [record(-1), record(1, id="gsm8k-1"), wrong_answer]))
    [trajectory] = list(source)
    assert source.format == "processbench" and source.format_detected
    assert (trajectory.id, trajectory.question, trajectory.steps) == ("gsm8k-0", "What is 2 + 3?", STEPS)
    assert trajectory.answer == "5"  # from the solution itself: the record has no reference answer
    assert trajectory.meta == {"idx": "gsm8k-0", "source_format": "processbench", "generator": "a-model"}
    assert source.stats.skipped == {"not_all_correct": 1, "answer_wrong": 1}


def test_detected_by_its_fields():
    assert detect_format(record(-1)) == "processbench"


@pytest.mark.parametrize("bad, message", [
    ({"label": 2}, "label is 2: the index of the first wrong step (0 to 1), or -1"),
    ({"label": "-1"}, "field 'label' must be int, not str"),
    ({"steps": []}, "steps is empty"),
])
def test_a_malformed_record_names_its_line(tmp_path, bad, message):
    path = write(tmp_path, [record(-1), {**record(-1), **bad}])
    with pytest.raises(InputError, match=re.escape(f"{path}:2: {message}")):
        list(load_trajectories(path, "processbench"))
