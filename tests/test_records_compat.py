"""Run directories written before records were typed end to end still read, every record with its values
(tests/fixtures/run-dir-compat, written by the toolkit as it was; see its README)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from injector.records.directory import RunDirectory
from injector.model.provenance import Attempt, Usage
from injector.records.models import Candidate, Rejection, RunManifest
from injector.triage.verdicts import VERIFY_FILE, JudgeSettings, VerifyRecord, read_verdicts
from injector.util.errors import UserError

COMPAT = Path(__file__).parent / "fixtures" / "run-dir-compat"


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


@pytest.mark.parametrize("name", ["offline", "llm"])
def test_every_record_of_an_old_run_directory_reads_with_its_values(name: str) -> None:
    path = COMPAT / name
    directory = RunDirectory(path)
    candidates = list(directory.candidates(strict=True))
    rejections = list(directory.rejections(strict=True))
    assert candidates and rejections
    # Written back, each record is the line it was read from: no field lost, none changed, none added.
    assert [c.model_dump(mode="json", exclude_unset=True) for c in candidates] == lines(path / "candidates.jsonl")
    assert [r.model_dump(mode="json", exclude_unset=True) for r in rejections] == lines(path / "rejects.jsonl")


def test_the_usage_and_cost_of_an_old_llm_run_read_back() -> None:
    directory = RunDirectory(COMPAT / "llm")
    candidate, = directory.candidates(strict=True)
    rejection, = directory.rejections(strict=True)
    assert candidate.provenance.usage == Usage(prompt_tokens=100, completion_tokens=50)
    assert candidate.provenance.cost == 0.0002 and candidate.provenance.engine == "llm"
    assert candidate.provenance.details == {"temperature": 1.0, "max_tokens": 4096, "schema": True}
    assert rejection.provenance.attempts == [Attempt(codes=["parse_error"])] * 2
    counts, totals = directory.count_outcomes()
    assert (counts.candidates, counts.rejects, counts.codes) == (1, 1, {"parse_error": 1})
    assert totals.model_dump() == {"prompt_tokens": 300, "completion_tokens": 150, "cost": pytest.approx(0.0006),
                                   "cost_known": True}


def test_fields_an_older_writer_added_move_into_provenance_on_read(tmp_path: Path) -> None:
    directory = RunDirectory(COMPAT / "legacy")
    first, second = directory.candidates(strict=True)
    rejection, = directory.rejections(strict=True)
    assert first.provenance.legacy == {"model": "gpt-4o-2024-08-06", "cost": 0.0123,
                                       "judge_notes": {"checked_by": "alice"}}
    assert first.provenance.engine == "offline" and first.provenance.cost == 0.0  # the record's own, untouched
    assert second.provenance.legacy == {}
    assert rejection.provenance.legacy == {"attempt_seconds": [1.5, 2.0]}
    # Every other value is the line's; written back, the legacy fields sit in provenance and read the same again.
    raw = lines(COMPAT / "legacy" / "candidates.jsonl")[0]
    dumped = first.model_dump(mode="json", exclude_unset=True)
    assert dumped["provenance"] == {**raw["provenance"], "legacy": {k: raw[k] for k in ("model", "cost", "judge_notes")}}
    assert {k: v for k, v in dumped.items() if k != "provenance"} == {
        k: v for k, v in raw.items() if k not in ("provenance", "model", "cost", "judge_notes")}
    again = RunDirectory(tmp_path)
    again.append_to(again.candidates_path, first)
    assert list(again.candidates(strict=True)) == [first]
    again.close_files()


def test_a_record_made_with_an_unknown_field_is_refused() -> None:
    valid = lines(COMPAT / "offline" / "candidates.jsonl")[0]
    with pytest.raises(ValidationError, match="extra"):
        Candidate.model_validate({**valid, "modifed_steps": [1]})  # misspelt where the record is made
    reject = lines(COMPAT / "offline" / "rejects.jsonl")[0]
    with pytest.raises(ValidationError, match="extra"):
        Rejection(**{**reject, "reasons": ["x"]})
    assert Rejection.from_stored({**reject, "reasons": ["x"]}).provenance.legacy == {"reasons": ["x"]}


@pytest.mark.parametrize("name", ["offline", "llm", "legacy"])
def test_an_old_manifest_reads_as_a_run_manifest(name: str) -> None:
    path = COMPAT / name / "manifest.json"
    manifest = RunDirectory(COMPAT / name).read_manifest()
    assert isinstance(manifest, RunManifest)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert manifest.model_dump(mode="json") == raw
    assert manifest.config_hash == raw["config_hash"] and manifest.status == "finished"


def test_a_manifest_of_the_wrong_shape_is_one_user_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps({"config_hash": "x", "categories": {"c": "not an object"}}))
    with pytest.raises(UserError, match=r"manifest.json: not a run manifest \(categories.c: .*\); remove"):
        RunDirectory(tmp_path).read_manifest()
    (tmp_path / "manifest.json").write_text(json.dumps({"status": "finished"}))  # partial, by hand: still reads
    assert RunDirectory(tmp_path).read_manifest() == RunManifest(status="finished")


def test_an_old_verify_record_reads_back_as_the_model_with_its_values(tmp_path: Path) -> None:
    raw, = lines(COMPAT / "llm" / VERIFY_FILE)
    record = read_verdicts(COMPAT / "llm")[raw["id"]]
    assert isinstance(record, VerifyRecord) and record.model_dump(mode="json", exclude_unset=True) == raw
    assert (record.verdict, record.judge_modified.first_error_step, record.usage.requests) == ("original_flagged", 2, 2)
    assert record.judge is not None and record.judge.engine == "llm" and record.judge.votes == 1
    assert record.judge.same_as(JudgeSettings.model_validate(raw["judge"]))  # a rerun with these settings skips it
    # Written as the model (as `inject verify` appends it) and read back: the same record.
    (tmp_path / "manifest.json").write_text("{}")
    directory = RunDirectory(tmp_path)
    directory.append_to(tmp_path / VERIFY_FILE, record)
    directory.close_files()
    assert read_verdicts(tmp_path) == {record.id: record}
    assert lines(tmp_path / VERIFY_FILE) == [raw]
