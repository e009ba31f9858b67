"""The verify.jsonl reader shared by review and build."""

import json

from injector.triage.verdicts import VERDICTS, read_verdicts, verdict_rank


def _line(id_: str, verdict: str) -> str:
    return json.dumps({"id": id_, "category": "counterfactual", "trajectory_id": "t", "verdict": verdict,
                       "kind": "error", "declared_first_error": 3,
                       "judge_modified": {"first_error_step": 2, "reason": "step 2 is wrong"},
                       "judge_original": {"first_error_step": -1, "reason": ""}})


def test_latest_line_wins_and_bad_lines_are_skipped(tmp_path, caplog):
    (tmp_path / "verify.jsonl").write_text("\n".join([
        _line("a", "early"), '{"id": "b", "verdict": "nonsense"}', "[1, 2]", _line("a", "confirmed")]) + "\n")
    verdicts = read_verdicts(tmp_path)
    assert list(verdicts) == ["a"]
    assert verdicts["a"].verdict == "confirmed"
    assert verdicts["a"].reason == "step 2 is wrong"
    assert "verify.jsonl:2" in caplog.text and "verify.jsonl:3" in caplog.text


def test_no_file_means_no_verdicts(tmp_path):
    assert read_verdicts(tmp_path) == {}


def test_rank_puts_missed_first_confirmed_last_and_unverified_after():
    ordered = sorted(["confirmed", None, "missed", "late", "original_flagged"], key=verdict_rank)
    assert ordered == ["missed", "original_flagged", "late", "confirmed", None]
    assert VERDICTS[-1] == "confirmed"
