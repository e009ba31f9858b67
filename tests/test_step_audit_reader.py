"""One reader of labelled files (sources/labelled.py) for `inject eval`, `inject stats` and the step audit."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from injector.curate.stats import compute_stats
from injector.evaluate.splits import load_split
from injector.sources.labelled import detect_labelled_format, labelled_lines, step_record
from injector.triage.step_audit.noise import estimate_label_noise
from injector.util.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures" / "prmbench"


def test_each_file_of_a_directory_is_read_in_its_own_format(tmp_path):
    shutil.copy(FIXTURES / "prm800k_train_p1_first400_4o_confidence.jsonl", tmp_path / "a_prmbench.jsonl")
    (tmp_path / "gsm8k.jsonl").write_text(json.dumps({"id": "g-1", "steps": ["1 + 1 = 2", "So 2."], "label": 1}))
    (tmp_path / "split.jsonl").write_text(json.dumps({"id": "s-1", "category": "counterfactual",
                                                      "modified_process": ["3 * 3 = 9"], "error_steps": [1]}))
    lines = list(labelled_lines(tmp_path))
    assert [line.fmt for line in lines] == ["prmbench"] * 25 + ["processbench", "split"]
    records = [step_record(line, {"confidence": "confidence"}) for line in lines]
    assert (records[0].category, records[-2].category, records[-2].error_steps, records[-1].id) == (
        "confidence", "gsm8k", [2], "s-1")
    assert records[0].id == f"{lines[0].record['idx']}::confidence"


def test_the_three_commands_share_format_detection():
    from injector.evaluate import splits

    assert splits.detect_split_format is detect_labelled_format


def _broken(tmp_path: Path) -> Path:
    good = (FIXTURES / "prm800k_train_p1_first400_4o_confidence.jsonl").read_text().splitlines()[0]
    bad = json.loads(good) | {"error_steps": "3"}
    path = tmp_path / "broken.jsonl"
    path.write_text(good + "\n" + json.dumps(bad) + "\n")
    return path


def test_stats_and_the_audit_refuse_the_same_record_at_the_same_line(tmp_path):
    path = _broken(tmp_path)
    with pytest.raises(InputError, match=r"broken\.jsonl:2: error_steps must be a list"):
        compute_stats(path)
    with pytest.raises(InputError, match=r"broken\.jsonl:2: error_steps must be a list"):
        estimate_label_noise([path])


def test_eval_and_the_audit_read_the_same_items(tmp_path):
    path = tmp_path / "confidence.jsonl"
    shutil.copy(FIXTURES / "prm800k_train_p1_first400_4o_confidence.jsonl", path)
    evaluated = load_split(path)
    audited = estimate_label_noise([path])
    assert [item.id for item in evaluated.items] == [audit.id for audit in audited.audits]
    assert {item.category for item in evaluated.items} == {audit.category for audit in audited.audits}
