"""The prmbench protocol on a complete PRMBench-format directory, against an independent reimplementation of
PRMBench's `load_data_function` and `evaluate_function` (mr_eval/tasks/prmtest_classified/task.py) written from
their description: first record of a repeated (classification, idx) kept; a `correct_<idx>` control from every
redundancy item's `original_process`; the loop runs over the model's labels and a step is correct when its number
is not among the error steps; precision and recall 0 on an empty denominator, F1 -1 when both are 0; PRMScore
0.5·F1 + 0.5·F1_neg (F1 alone for multi-solutions and the controls); overall pooled over steps, controls apart.

The directory: PRMBench's eight train-phase-1 category files, whole (tests/fixtures/prmbench_train_p1), and a
synthetic multi-solutions file repeating idx 47, 48, 50, 53, 54 on lines 136, 137, 155, 160, 161.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import random
from pathlib import Path

import pytest

from injector.evaluate import BootstrapSettings, EvalRequest, ScoresFile, evaluate, load_split

FIXTURES = Path(__file__).parent / "fixtures" / "prmbench_train_p1"
REPEATS = {136: 47, 137: 48, 155: 50, 160: 53, 161: 54}


def multi_solution_records(n_lines: int = 165) -> list[dict]:
    rng = random.Random(26)
    records, next_idx = [], 0
    for line in range(1, n_lines + 1):
        if line in REPEATS:
            idx = REPEATS[line]
        else:
            idx, next_idx = next_idx, next_idx + 1
        steps = [f"Step {k}: synthetic solution on line {line}." for k in range(1, rng.randint(2, 7))]
        records.append({"original_question": f"q{idx}", "modified_question": f"q{idx}", "original_process": steps,
                        "modified_process": steps, "modified_steps": [], "error_steps": [], "reason": "",
                        "idx": f"prm_test_p1_{idx}", "question": f"q{idx}", "classification": "multi_solutions"})
    return records


@pytest.fixture(scope="module")
def directory(tmp_path_factory):
    path = tmp_path_factory.mktemp("prmbench_data")
    for file in sorted(FIXTURES.glob("*.jsonl.gz")):
        (path / file.name[:-3]).write_bytes(gzip.decompress(file.read_bytes()))
    (path / "prm_test_p12_multi_solutions.jsonl").write_text(
        "".join(json.dumps(record) + "\n" for record in multi_solution_records()))
    return path


def _unit(*parts) -> float:
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def ordinary(item, k):      # error steps mostly low, others mostly high
    u = _unit("ordinary", item.id, k)
    return 0.7 * u if k in item.error_steps else 0.25 + 0.75 * u


def never_flags_errors(item, k):   # every true error step scored correct: no true hit of the error class
    return 0.95 if k in item.error_steps else _unit("never", item.id, k)


def ties(item, k):          # a third of the steps exactly at 0.5, which is not > 0.5
    u = _unit("ties", item.id, k)
    return 0.5 if u < 1 / 3 else 0.2 if k in item.error_steps else 0.8


def write_scores(path: Path, items, scorer) -> Path:
    path.write_text("".join(json.dumps({"id": item.id, "step_scores": [scorer(item, k) for k in
                                                                        range(1, len(item.steps) + 1)]}) + "\n"
                            for item in items))
    return path


# --- the reference: PRMBench's load and evaluate, reimplemented straightforwardly -------------------------------
def reference_load(directory: Path) -> list[dict]:
    raw = [json.loads(line) for file in sorted(directory.glob("*.jsonl"))
           for line in file.read_text().splitlines() if line.strip()]
    samples = []
    for record in raw:
        if record["classification"] == "redundency":
            samples.append({"idx": f"correct_{record['idx']}", "classification": "correct",
                            "steps": record["original_process"], "error_steps": []})
        samples.append({"idx": record["idx"], "classification": record["classification"],
                        "steps": record["modified_process"], "error_steps": record["error_steps"]})
    kept, seen = [], set()
    for sample in samples:
        key = (sample["classification"], sample["idx"])
        if key not in seen:
            seen.add(key)
            kept.append(sample)
    return kept


def reference_f1(tp, fp, fn):
    precision = tp / (tp + fp) if tp + fp > 0 else 0
    recall = tp / (tp + fn) if tp + fn > 0 else 0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else -1


def reference_evaluate(samples, labels_of) -> dict:
    counts: dict[str, list[int]] = {}
    for sample in samples:
        tally = counts.setdefault(sample["classification"], [0, 0, 0, 0])  # TP FP TN FN, positive = correct step
        for position, label in enumerate(labels_of(sample)):
            truth = (position + 1) not in sample["error_steps"]
            if truth and label:
                tally[0] += 1
            elif truth:
                tally[3] += 1
            elif label:
                tally[1] += 1
            else:
                tally[2] += 1

    def score(tally, f1_only):
        tp, fp, tn, fn = tally
        f1, f1_neg = reference_f1(tp, fp, fn), reference_f1(tn, fn, fp)
        return f1 if f1_only else 0.5 * f1 + 0.5 * f1_neg

    pooled = [sum(c[k] for name, c in counts.items() if name != "correct") for k in range(4)]
    return {"overall": score(pooled, False),
            "per_classification": {name: score(c, name in ("multi_solutions", "correct")) for name, c in counts.items()}}


@pytest.mark.parametrize("scorer", [ordinary, never_flags_errors, ties], ids=lambda f: f.__name__)
def test_prmbench_protocol_equals_prmbench_code_on_a_complete_directory(directory, tmp_path, scorer):
    loaded = load_split(directory)
    assert loaded.protocol == "prmbench"
    scores_path = write_scores(tmp_path / "scores.jsonl", loaded.items, scorer)
    result = evaluate(EvalRequest(split=directory, out=tmp_path / "report", plots=False,
                                  bootstrap=BootstrapSettings(resamples=50)), ScoresFile(scores_path))
    scores = {json.loads(line)["id"]: json.loads(line)["step_scores"] for line in scores_path.read_text().splitlines()}
    expected = reference_evaluate(reference_load(directory),
                                  lambda sample: [s > 0.5 for s in scores[f"{sample['idx']}::{sample['classification']}"]])
    prmbench = result.metrics["prmbench"]
    assert prmbench["overall"]["prmscore"] == pytest.approx(expected["overall"], abs=1e-6)
    category_of = {item.id.split("::")[1]: item.category for item in loaded.items}
    for classification, value in expected["per_classification"].items():
        figures = prmbench["correct"] if classification == "correct" else \
            prmbench["per_category"][category_of[classification]]
        assert figures["prmscore"] == pytest.approx(value, abs=1e-6), classification
    if scorer is never_flags_errors:
        assert prmbench["overall"]["f1_neg"] == -1 and "F1 written as -1" in " ".join(result.metrics["warnings"])


def test_the_directory_is_read_as_published_with_what_was_left_out_counted(directory):
    loaded = load_split(directory)
    assert [entry.rsplit(" ", 1)[1] for entry in loaded.repeated] == [
        f"(prm_test_p1_{idx}::multi_solutions)" for idx in (47, 48, 50, 53, 54)]
    assert [entry.split(":")[1].split(" ")[0] for entry in loaded.repeated] == ["136", "137", "155", "160", "161"]
    # 3,203 category records + 160 unique multi-solutions + 401 controls from the redundancy file.
    assert len(loaded.items) == 3203 + 160 + 401 and loaded.controls == 401
    assert loaded.out_of_range_items == 12          # confidence 4, counterfactual 1, deception 1, missing_condition 6
    assert any("left out, the first kept" in warning for warning in loaded.warnings())
    strict = pytest.raises(Exception, load_split, directory, protocol="strict")
    assert "again" in str(strict.value)


def test_per_category_figures_of_the_seeded_scorer_are_pinned(directory, tmp_path):
    loaded = load_split(directory)
    scores = write_scores(tmp_path / "scores.jsonl", loaded.items, ordinary)
    prmbench = evaluate(EvalRequest(split=directory, out=tmp_path / "r", plots=False, bootstrap=None),
                        ScoresFile(scores)).metrics["prmbench"]
    figures = {"overall": prmbench["overall"]["prmscore"], "correct": prmbench["correct"]["f1"],
               **{category: entry["prmscore"] for category, entry in prmbench["per_category"].items()}}
    assert figures == pytest.approx({
        "overall": 0.587337, "circular_logic": 0.648701, "confidence": 0.554553, "counterfactual": 0.614935,
        "deception": 0.600821, "domain_inconsistency": 0.563767, "missing_condition": 0.603875,
        "multi_solution": 0.79085, "redundancy": 0.575058, "step_contradiction": 0.539032, "correct": 0.801501},
        abs=5e-7)
