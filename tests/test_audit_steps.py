"""`inject audit FILE --steps`: findings per item, the label-noise estimate, JSON, exit codes (4 flagged, 2 bad)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from injector.cli.commands import main

FIXTURES = Path(__file__).parent / "fixtures"
PLANTED = FIXTURES / "step_audit" / "planted.jsonl"
CLEAN = FIXTURES / "step_audit" / "clean.jsonl"


def audit(*args: str):
    return CliRunner().invoke(main, ["audit", *args, "--steps"], catch_exceptions=False)


def test_planted_false_relations_are_flagged_per_item_and_counted_per_category():
    result = audit(str(PLANTED))
    assert result.exit_code == 4
    lines = dict(line.split("\t")[1::2] for line in result.stdout.splitlines() if "\t" in line)
    assert lines["planted-1::counterfactual"].startswith("unlabelled_false_step@3: 12 \\cdot 5 = 65 (left side = 60)")
    assert lines["planted-2::confidence"].startswith("unlabelled_false_step@3: 7 * 9 = 62 (left side = 63)")
    assert lines["planted-3::circular"].startswith("unlabelled_false_step@3: 11^2 = 111")
    assert lines["planted-4::deception"] == "clean"
    table = result.output.split("| category |")[1]
    assert "| circular_logic | 1 | 1 | 100.0 [" in table and "| deception | 1 | 0 | 0.0 [0.0, " in table
    assert "| all | 4 | 3 | 75.0 [" in table


def test_a_clean_file_exits_0_and_report_only_exits_0_on_flags():
    assert audit(str(CLEAN)).exit_code == 0
    assert audit(str(PLANTED), "--report-only").exit_code == 0


def test_json_lines_give_each_item_then_the_estimate():
    result = audit(str(PLANTED), "--json")
    assert result.exit_code == 4
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    items, summary = rows[:-1], rows[-1]["label_noise"]
    assert [(item["line"], len(item["findings"])) for item in items] == [(1, 1), (2, 1), (3, 1), (4, 0)]
    assert items[0]["findings"][0] | {"message": ""} == {
        "kind": "unlabelled_false_step", "step": 3, "relation": "12 \\cdot 5 = 65", "written_value": "65",
        "true_value": "60", "message": ""}
    overall = summary["overall"]
    assert (overall["items"], overall["flagged_items"], overall["per_100"]) == (4, 3, 75.0)
    assert overall["low_per_100"] < 75 < overall["high_per_100"]
    assert overall["coverage"] == overall["checked_steps"] / overall["steps"] > 0


def test_published_prmbench_records_processbench_and_split_files_are_read(tmp_path):
    prmbench = tmp_path / "confidence.jsonl"
    shutil.copy(FIXTURES / "prmbench" / "prm800k_train_p1_first400_4o_confidence.jsonl", prmbench)
    rows = [json.loads(line) for line in audit(str(prmbench), "--json", "--report-only").stdout.splitlines()]
    assert len(rows) == 26 and rows[-1]["label_noise"]["categories"][0]["category"] == "confidence"
    gsm8k = tmp_path / "gsm8k.jsonl"
    gsm8k.write_text(json.dumps({"id": "g", "steps": ["So $3 + 4 = 8$.", "Done."], "label": -1}) + "\n")
    assert "unlabelled_false_step@1: 3 + 4 = 8" in audit(str(gsm8k)).stdout
    split = tmp_path / "split.jsonl"
    split.write_text(json.dumps({"id": "s", "category": "counterfactual", "modified_process": ["$2 \\cdot 3 = 6$"],
                                 "error_steps": [], "modified_steps": []}) + "\n")
    assert audit(str(split)).stdout.startswith(f"{split}:1\ts\tcounterfactual\tclean")


def test_a_bad_line_is_file_line_exit_2_and_prints_no_item(tmp_path):
    path = tmp_path / "bad.jsonl"
    good = PLANTED.read_text().splitlines()[0]
    path.write_text(good + "\n" + json.dumps(json.loads(good) | {"modified_process": "one step"}) + "\n")
    result = audit(str(path))
    assert result.exit_code == 2
    assert f"{path}:2: `modified_process` must be a non-empty list of step texts" in result.output
    assert "planted-1" not in result.output


def test_a_directory_of_jsonl_files_is_read_with_steps(tmp_path):
    shutil.copy(PLANTED, tmp_path / "a.jsonl")
    shutil.copy(CLEAN, tmp_path / "b.jsonl")
    result = audit(str(tmp_path))
    assert result.exit_code == 4 and "| all | 8 | 3 | 37.5 [" in result.output
