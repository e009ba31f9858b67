"""The surface-cue probe (`inject stats --cues`, injector/triage/cues.py): planted cue words are found, random labels are
not, degenerate inputs report a reason instead of crashing, the JSON has the documented shape with our category ids,
and PRMBench-format files (tests/fixtures/prmbench, Apache-2.0) are read."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from injector.cli.commands import main
from injector.triage.cues import cue_report, samples

PRMBENCH = Path(__file__).parent / "fixtures" / "prmbench"
FILLER = [f"w{letter}{other}" for letter in "abcdefgh" for other in "abcdefgh"]  # 64 neutral words


def _solutions(count: int, *, seed: int, category: str = "counterfactual", planted: str | None = None,
               random_labels: bool = False, steps: int = 8) -> list[dict]:
    """Synthetic solutions of filler words; error steps carry `planted` when given, or are drawn at random."""
    rng = random.Random(seed)
    records = []
    for number in range(count):
        texts = [" ".join(rng.choice(FILLER) for _ in range(8)) for _ in range(steps)]
        if random_labels:
            errors = sorted(k for k in range(1, steps + 1) if rng.random() < 0.3) or [1]
        else:
            first = rng.randint(2, steps)
            errors = list(range(first, min(steps, first + 1) + 1))
        if planted:
            for k in errors:
                texts[k - 1] += f" {planted}"
        records.append({"category": category, "group": f"t{number}", "steps": texts, "error_steps": errors})
    return records


def test_planted_cue_words_are_found():
    report = cue_report(_solutions(60, seed=1, planted="clearly verify"))
    category = report["per_category"]["counterfactual"]
    assert category["auc"] > 0.95 and report["overall"]["auc"] > 0.95
    assert {"clearly", "verify", "clearly verify"} & {word for word, _ in category["top"][:3]}


def test_random_labels_score_near_chance():
    report = cue_report(_solutions(80, seed=2, random_labels=True))
    assert 0.4 <= report["per_category"]["counterfactual"]["auc"] <= 0.6
    assert report["overall"]["n"] == 80 * 8


def test_the_probe_is_seeded_and_groups_a_trajectory_into_one_fold():
    records = _solutions(40, seed=3, random_labels=True)
    assert cue_report(records) == cue_report(records)
    # Leakage check: every trajectory repeated word for word under the same group. Grouped folds keep the copies
    # together, so the model cannot look up a step's own label in training; random labels stay near chance.
    doubled = records + [dict(record) for record in records]
    assert cue_report(doubled)["per_category"]["counterfactual"]["auc"] < 0.65
    # The same copies as separate trajectories do leak: the check above can fail.
    leaked = records + [{**record, "group": record["group"] + "-copy"} for record in records]
    assert cue_report(leaked)["per_category"]["counterfactual"]["auc"] > 0.8


def test_samples_are_every_step_of_solutions_with_an_error():
    records = [{"category": "c", "group": "a", "steps": ["x", "y", "z"], "error_steps": [2]},
               {"category": "c", "group": "b", "steps": ["p", "q"], "error_steps": []}]
    assert samples(records) == [("c", "a", "x", 0), ("c", "a", "y", 1), ("c", "a", "z", 0)]


def test_degenerate_categories_report_a_reason_not_a_crash():
    few = _solutions(3, seed=4, category="deception", planted="again")  # 3 trajectories < 5 folds
    every = [{**record, "category": "confidence", "error_steps": list(range(1, 9)), "group": f"e{n}"}
             for n, record in enumerate(_solutions(6, seed=5))]  # every step an error step: one class
    none = [{**record, "category": "multi_solution", "error_steps": []} for record in _solutions(6, seed=6)]
    report = cue_report(few + every + none + _solutions(30, seed=7, planted="assume"))
    per = report["per_category"]
    assert per["deception"]["auc"] is None and "fewer than the 5 folds" in per["deception"]["reason"]
    assert per["confidence"]["auc"] is None and "every step is an error step" in per["confidence"]["reason"]
    assert per["multi_solution"]["auc"] is None and per["multi_solution"]["n"] == 0
    assert per["counterfactual"]["auc"] > 0.95 and "reason" not in per["counterfactual"]
    empty = cue_report([])
    assert empty["overall"]["auc"] is None and empty["per_category"] == {}


def _stats(*args: str):
    return CliRunner().invoke(main, ["stats", *args])


def test_stats_cues_json_on_a_prmbench_file_maps_categories_to_our_ids(tmp_path):
    result = _stats("--cues", "--json", str(PRMBENCH / "prm800k_train_p1_first400_4o_redundency.jsonl"))
    assert result.exit_code == 0, result.output
    numbers = json.loads(result.output)
    cues = numbers["cues"]
    assert set(cues["overall"]) >= {"auc", "n"} and list(cues["per_category"]) == ["redundancy"]
    redundancy = cues["per_category"]["redundancy"]
    assert set(redundancy) >= {"auc", "n", "top"} and 0.5 < redundancy["auc"] <= 1
    assert all(isinstance(word, str) and isinstance(weight, float) for word, weight in redundancy["top"])
    steps = sum(len(json.loads(line)["modified_process"]) for line in
                (PRMBENCH / "prm800k_train_p1_first400_4o_redundency.jsonl").read_text().splitlines()
                if json.loads(line)["error_steps"])
    assert redundancy["n"] == cues["overall"]["n"] == steps
    assert numbers["categories"]["redundancy"]["cue_auc"] == redundancy["auc"]


def test_stats_cues_on_a_directory_of_prmbench_files(tmp_path):
    result = _stats("--cues", str(PRMBENCH))
    assert result.exit_code == 0, result.output
    header, *rows = result.output.splitlines()
    assert header.split()[-6:] == ["cue", "AUC", "pos", "AUC", "len", "AUC"]
    by_name = {row.split()[0]: row.split() for row in rows if row and not row.startswith(" ")}
    assert {"circular_logic", "redundancy", "step_contradiction", "multi_solution"} <= set(by_name)
    assert by_name["multi_solution"][-1] == "-"
    assert "multi_solution: no AUC (no solution with an error step" in result.output


def test_stats_reports_answer_changes_and_error_steps_per_category(tmp_path):
    source = ["We add: $2+3=5$.", "# Answer\n\n5"]
    records = [
        {"original_question": "2+3?", "original_process": source, "modified_process": ["We add: $2+3=6$.",
         "# Answer\n\n6"], "error_steps": [1, 2], "classification": "counterfactual", "idx": "a"},
        {"original_question": "2+3?", "original_process": source, "modified_process": ["We add: $2+3=5$.",
         "So $5$.", "# Answer\n\n5.0"], "error_steps": [2], "classification": "counterfactual", "idx": "b"},
        {"original_question": "2+3?", "original_process": ["2+3 is five."], "modified_process": ["2+3 is six."],
         "error_steps": [1, 7], "classification": "counterfactual", "idx": "c"},  # no answer marker; 7 is past the end
    ]
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    result = _stats("--json", str(path))
    assert result.exit_code == 0, result.output
    row = json.loads(result.output)["categories"]["counterfactual"]
    assert row["answer_changed_share"] == 0.5 and row["answer_checked"] == 2  # 6 ≠ 5, 5.0 ≡ 5; c unknown
    assert row["mean_error_steps"] == round((2 + 1 + 1) / 3, 3)
    assert row["mean_error_position"] == round((1 / 2 + 2 / 3 + 1 / 1) / 3, 3)
    assert "cues" not in json.loads(result.output) and "cue_auc" not in row


def test_bad_prmbench_input_is_a_one_line_error(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"classification": "confidence", "original_process": ["a"], "modified_process": ["b"], '
                   '"error_steps": [1]}\n{not json\n')
    result = _stats("--cues", str(bad))
    assert result.exit_code == 2 and f"{bad}:2: not valid JSON" in result.output
    assert "Traceback" not in result.output
    bad.write_text('{"classification": "confidence", "original_process": ["a"], "modified_process": ["b"], '
                   '"error_steps": "1"}\n')
    result = _stats("--cues", str(bad))
    assert result.exit_code == 2 and f"{bad}:1: error_steps must be a list" in result.output
    bad.write_bytes(b'{"classification": "\xff"}\n')
    result = _stats(str(bad))
    assert result.exit_code == 2 and f"{bad}:1: not valid JSON" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = _stats(str(empty))
    assert result.exit_code == 2 and "PRMBench-format JSONL" in result.output


def test_scikit_learn_is_imported_only_by_the_probe():
    code = ("import sys, injector.cli.commands, injector.curate.stats, injector.curate.card, injector.triage.cues; "
            "print('sklearn' in sys.modules)")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"


def _row(category: str, group: str, original: list[str], modified: list[str], errors: list[int]) -> dict:
    return {"category": category, "trajectory_id": group, "original_process": original, "modified_process": modified,
            "error_steps": errors, "ground_truth": None}


def test_the_dataset_card_reports_what_each_category_produces():
    from injector.curate.card import _production_section

    source = ["We add: $2+3=5$.", "# Answer\n\n5"]
    rows = [_row("counterfactual", "a", source, ["We add: $2+3=6$.", "# Answer\n\n6"], [1, 2]),
            _row("counterfactual", "b", source, ["We add: $2+3=5$.", "Again.", "# Answer\n\n5"], [2]),
            _row("counterfactual", "c", ["Five."], ["Six."], [1])]  # no answer found: not counted
    rows += [_row("redundancy", record["group"], record["steps"], record["steps"], record["error_steps"])
             for record in _solutions(20, seed=8, category="redundancy", planted="once more")]
    section = _production_section(rows)
    assert "| counterfactual | 3 | 50% of 2 | 1.33 | 0.72 | - |" in section  # (1/2 + 2/3 + 1/1) / 3
    assert "- counterfactual: no cue AUC (3 source problems, fewer than the 5 folds)" in section
    redundancy = next(line for line in section.splitlines() if line.startswith("| redundancy |"))
    assert redundancy.startswith("| redundancy | 20 | - |") and redundancy.endswith("| 1.00 |")


def test_inject_build_writes_the_section_into_the_card(tmp_path):
    from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run

    taxonomy = Taxonomy.load()
    run(load_trajectories(), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy"]),
                                     out=tmp_path / "run", limit=8), OfflineEngine())
    result = CliRunner().invoke(main, ["build", str(tmp_path / "run"), "--out", str(tmp_path / "split"),
                                       "--include-unreviewed"])
    assert result.exit_code == 0, result.output
    card = (tmp_path / "split" / "README.md").read_text()
    section = card.split("## What the categories produce")[1].split("\n## ")[0]
    redundancy = next(line for line in section.splitlines() if line.startswith("| redundancy |")).split(" | ")
    rows = [json.loads(line) for line in (tmp_path / "split" / "jsonl" / "redundancy.jsonl").read_text().splitlines()]
    assert redundancy[1] == str(len(rows)) and redundancy[2] == f"0% of {len(rows)}"  # redundancy keeps the answer
    assert redundancy[3] == f"{sum(len(r['error_steps']) for r in rows) / len(rows):.2f}"


def test_a_run_directory_with_only_rejects_is_still_a_run_directory(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text("{}")
    (run / "rejects.jsonl").write_text(json.dumps({"id": "t::confidence::0", "trajectory_id": "t", "idx": "t",
                                                   "category": "confidence", "sample": 0,
                                                   "codes": ["not_applicable"]}) + "\n")
    result = _stats("--cues", "--json", str(run))
    assert result.exit_code == 0, result.output
    numbers = json.loads(result.output)
    assert numbers["categories"]["confidence"]["rejected_by_validation"] == 1
    assert numbers["cues"]["overall"]["auc"] is None and numbers["cues"]["per_category"] == {}
