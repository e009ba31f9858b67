"""Label rules, ProcessBench per subset, bootstrap intervals and the paired --compare."""
from __future__ import annotations

import json

import pytest

from injector.evaluate import BootstrapSettings, EvalRequest, ScoresFile, compare, evaluate
from injector.evaluate.protocols import parse_label_rule, rule_for_model


def test_label_rules_turn_scores_into_labels_as_prmbench_wrappers_do():
    assert parse_label_rule("threshold:0.5").labels([0.9, 0.5, 0.51]) == [True, False, True]
    assert parse_label_rule("threshold:0").labels([0.0, 1.0]) == [False, True]
    # Skywork: step 1 by its own score > 0.5, then the step-to-step difference > -0.05.
    assert parse_label_rule("step-difference:-0.05").labels([0.6, 0.56, 0.50, 0.9]) == [True, True, False, True]
    assert rule_for_model("Skywork/Skywork-o1-Open-PRM-Qwen-2.5-7B") == "step-difference:-0.05"
    assert rule_for_model("my-own-prm") is None
    with pytest.raises(Exception, match="threshold:T"):
        parse_label_rule("above:0.5")


def write(path, records):
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def test_processbench_per_subset_mean_and_undefined_f1(tmp_path):
    data = tmp_path / "pb"
    data.mkdir()
    # gsm8k: a (error at 0) found, b (correct) right -> acc 1, 1, F1 1. math: c (error at 1) missed, d (correct)
    # flagged -> both accuracies 0: ProcessBench's NaN, reported undefined, so the subset mean is undefined too.
    write(data / "gsm8k.jsonl", [{"id": "a", "steps": ["x", "y"], "label": 0}, {"id": "b", "steps": ["x"], "label": -1}])
    write(data / "math.jsonl", [{"id": "c", "steps": ["x", "y"], "label": 1}, {"id": "d", "steps": ["x"], "label": -1}])
    scores = write(tmp_path / "s.jsonl", [{"id": "a", "step_scores": [0.1, 0.9]}, {"id": "b", "step_scores": [0.9]},
                                          {"id": "c", "step_scores": [0.9, 0.9]}, {"id": "d", "step_scores": [0.1]}])
    pb = evaluate(EvalRequest(split=data, out=tmp_path / "r", plots=False), ScoresFile(scores)).metrics["processbench"]
    assert pb["per_category"]["gsm8k"]["f1"] == 1.0
    assert pb["per_category"]["math"]["f1"] is None and pb["per_category"]["math"]["f1_undefined"]
    assert pb["average_f1"] is None and pb["f1"] == pytest.approx(0.5)   # pooled: acc 1/2 and 1/2
    assert "ci" in pb["per_category"]["gsm8k"]


def test_paired_compare_says_within_noise_when_the_interval_contains_zero(tmp_path):
    records = [{"id": f"e{k}", "category": "confidence", "modified_process": ["a", "b", "c"], "error_steps": [2]}
               for k in range(30)]
    split = write(tmp_path / "split.jsonl", records)
    good = write(tmp_path / "good.jsonl", [{"id": r["id"], "step_scores": [0.9, 0.1, 0.9]} for r in records])
    nearly = write(tmp_path / "nearly.jsonl", [{"id": r["id"], "step_scores": [0.9, 0.1 if k else 0.9, 0.9]}
                                              for k, r in enumerate(records)])
    bad = write(tmp_path / "bad.jsonl", [{"id": r["id"], "step_scores": [0.1, 0.9, 0.1]} for r in records])
    settings = BootstrapSettings(resamples=200)
    for name, scores in (("good", good), ("nearly", nearly), ("bad", bad)):
        evaluate(EvalRequest(split=split, out=tmp_path / name, plots=False, bootstrap=settings), ScoresFile(scores))
    close = compare([tmp_path / "good", tmp_path / "nearly"], settings)
    far = compare([tmp_path / "good", tmp_path / "bad"], settings)
    assert "| PRMScore overall |" in close and "within noise" in close.split("PRMScore overall")[1].splitlines()[0]
    assert "beyond noise" in far.split("PRMScore overall")[1].splitlines()[0]
    metrics = json.loads((tmp_path / "good" / "metrics.json").read_text())
    assert metrics["bootstrap"]["resamples"] == 200 and metrics["prmbench"]["overall"]["ci"]["prmscore"] == [1.0, 1.0]
