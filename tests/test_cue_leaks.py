"""The cue probes cannot leak: folds are grouped by source problem (`record_problem_key`), not by trajectory; the
position and length probes see no words; comparisons are at matched size. The whole PRMBench missing_condition
file (tests/fixtures/prmbench/full, Apache-2.0, see ATTRIBUTION.md) reads as PRMBench's own figures."""
from __future__ import annotations

import json
import random
from pathlib import Path

from injector.curate.stats import compute_stats
from injector.model.problem import problem_key, record_problem_key
from injector.triage.cues import cue_records, cue_report, matched_comparison, probe, samples

FULL = Path(__file__).parent / "fixtures" / "prmbench" / "full" / "prm800k_train_p1_first400_4o_missing_condition.jsonl"
FILLER = [f"w{a}{b}" for a in "abcdefgh" for b in "abcdefgh"]


def test_a_question_echoed_with_other_delimiters_and_choices_is_one_problem():
    plain = "Find $x$ if $2x = 6$."
    assert problem_key(plain) == problem_key("find x  if 2x=6.") == problem_key(
        "Find $x$ if $2x = 6$. $\\textbf{(A) }1\\qquad\\textbf{(B) }3$")
    assert problem_key(plain) != problem_key("Find $x$ if $2x = 8$.")


def test_the_problem_of_a_record():
    prmbench = {"idx": "prm_train_p1_7", "classification": "circular", "original_question": "Q"}
    assert record_problem_key(prmbench) == "idx:prm_train_p1_7"
    made_from_prmbench = {"idx": "prm_train_p1_7", "trajectory_id": "prm_train_p1_7-ab12", "original_question": "Q"}
    assert record_problem_key(made_from_prmbench) == "idx:prm_train_p1_7"
    # PRM800K: each solution is its own trajectory (idx = trajectory id); the question names the problem.
    one = {"idx": "s1", "trajectory_id": "s1", "original_question": "What is $1+1$?"}
    two = {"idx": "s2", "trajectory_id": "s2", "original_question": "What is 1+1?"}
    assert record_problem_key(one) == record_problem_key(two) == problem_key("What is 1+1?")
    assert record_problem_key({}) is None


def _copies_of_problems(count: int, copies: int, *, seed: int) -> list[tuple[dict, str]]:
    """`count` problems, each echoed as `copies` word-for-word identical records under different trajectory ids
    (as PRMBench sources of several category files give), error steps at random."""
    rng = random.Random(seed)
    rows = []
    for number in range(count):
        steps = [" ".join(rng.choice(FILLER) for _ in range(8)) for _ in range(8)]
        errors = sorted(k for k in range(1, 9) if rng.random() < 0.3) or [1]
        for copy in range(copies):
            rows.append(({"category": "counterfactual", "idx": f"p{number}", "trajectory_id": f"p{number}-{copy}",
                          "original_question": f"question {number}", "modified_process": steps,
                          "error_steps": errors}, "unreviewed"))
    return rows


def test_copies_of_one_problem_under_other_trajectory_ids_share_a_fold():
    records = cue_records(_copies_of_problems(40, 3, seed=1))
    assert len({r["group"] for r in records}) == 40
    assert cue_report(records)["per_category"]["counterfactual"]["auc"] < 0.65
    # Grouped by trajectory, as before, the copies leak: the check above can fail.
    by_trajectory = [{**r, "group": f"{r['group']}-{n}"} for n, r in enumerate(records)]
    assert cue_report(by_trajectory)["per_category"]["counterfactual"]["auc"] > 0.8


def _records(count: int, *, seed: int, last: bool = False, long: bool = False) -> list[dict]:
    rng = random.Random(seed)
    records = []
    for number in range(count):
        total = rng.randint(5, 12)
        steps = [" ".join(rng.choice(FILLER) for _ in range(rng.randint(4, 12))) for _ in range(total)]
        error = total if last else rng.randint(1, total)
        if long:
            steps[error - 1] += " " + " ".join(rng.choice(FILLER) for _ in range(30))
        records.append({"category": "c", "group": f"g{number}", "steps": steps, "error_steps": [error]})
    return records


def test_the_position_and_length_probes_find_what_they_should_and_nothing_else():
    at_random = cue_report(_records(80, seed=2))["per_category"]["c"]
    assert 0.35 <= at_random["position"]["auc"] <= 0.65 and 0.35 <= at_random["length"]["auc"] <= 0.65
    at_the_end = cue_report(_records(80, seed=3, last=True))["per_category"]["c"]
    assert at_the_end["position"]["auc"] > 0.95 and at_the_end["length"]["auc"] < 0.7
    longer = cue_report(_records(80, seed=4, long=True))["per_category"]["c"]
    assert longer["length"]["auc"] > 0.9 and longer["position"]["auc"] < 0.7


def test_matched_comparison_subsamples_the_larger_set_to_the_smaller_size():
    small, large = _records(30, seed=5, last=True), _records(120, seed=6, last=True)
    result = matched_comparison(small, large, repeats=5)
    assert result["size"] == 30
    assert result["ours"]["position"]["repeats"] == 1 and result["ours"]["position"]["sd"] == 0
    assert result["reference"]["position"]["repeats"] == 5
    assert result["reference"]["position"]["auc"] > 0.95 and result["reference"]["word"]["sd"] >= 0


def test_stats_on_a_whole_prmbench_file_reads_as_the_probe_grouped_by_idx():
    stats = compute_stats(FULL, cues=True)
    ours = stats["cues"]["per_category"]["missing_condition"]
    lines = [json.loads(line) for line in FULL.read_text(encoding="utf-8").splitlines()]
    by_idx = [{"category": "missing_condition", "group": r["idx"], "steps": r["modified_process"],
               "error_steps": sorted({k for k in r["error_steps"] if 1 <= k <= len(r["modified_process"])})}
              for r in lines]
    rows = samples(by_idx)
    reference = probe([r[2] for r in rows], [r[3] for r in rows], [r[1] for r in rows], top=0)
    assert abs(ours["auc"] - reference["auc"]) <= 0.02
    assert 0.6 <= ours["auc"] <= 0.9, ours["auc"]
    assert stats["categories"]["missing_condition"]["position_auc"] == ours["position"]["auc"]
    assert 0.5 <= ours["position"]["auc"] < 0.9 and 0.4 <= ours["length"]["auc"] < 0.9
