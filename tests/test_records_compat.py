"""Run directories written before records were typed end to end still read, every record with its values
(tests/fixtures/run-dir-compat, written by the toolkit as it was; see its README)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from injector.records.directory import RunDirectory

from injector.records.models import Candidate, Rejection

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
    assert candidate.provenance["usage"] == {"prompt_tokens": 100, "completion_tokens": 50}
    assert rejection.provenance["attempts"] == [{"codes": ["parse_error"]}, {"codes": ["parse_error"]}]
    assert directory.count_outcomes()["totals"]["prompt_tokens"] == 300


def test_fields_an_older_writer_added_still_read() -> None:
    directory = RunDirectory(COMPAT / "legacy")
    first, second = directory.candidates(strict=True)
    rejection, = directory.rejections(strict=True)
    assert first.model_extra == {"model": "gpt-4o-2024-08-06", "cost": 0.0123, "judge_notes": {"checked_by": "alice"}}
    assert not second.model_extra
    assert rejection.model_extra == {"attempt_seconds": [1.5, 2.0]}
