"""Hardening, second round: huge integers anywhere we read JSON end as a reject or FILE:LINE (never an internal
error), and a received run directory's files are opened as regular files only: no write through a planted symlink,
no hang on a FIFO, no unbounded read of /dev/zero, no file written outside `build --out`."""
from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_bounded_parsing import GOOD_EDITS, one_trajectory, run_args  # noqa: F401 (a fixture)
from test_review import make_run

from injector.answer.contract import AnswerError, parse_answer
from injector.cli.commands import main
from injector.util.json_bounds import MAX_INT_DIGITS, NumberTooLong, loads_bounded

BIG = "9" * 5000


def test_a_huge_integer_is_refused_by_the_bounded_reader():
    with pytest.raises(NumberTooLong, match="5000 digits"):
        loads_bounded("[" + BIG + "]")
    assert loads_bounded("[" + "9" * MAX_INT_DIGITS + "]") == [int("9" * MAX_INT_DIGITS)]
    assert loads_bounded("\ufeff{\"a\": 1}") == {"a": 1}  # a BOM, as the input readers take it


def test_a_huge_integer_in_an_answer_is_a_parse_error():
    text = '{"question": null, "edits": [{"op": "replace", "step": ' + BIG + ', "text": "x", "error": true}], ' \
           '"reason": "x"}'
    with pytest.raises(AnswerError) as caught:
        parse_answer(text)
    assert caught.value.code.value == "parse_error" and "5000 digits" in str(caught.value)


def test_a_huge_integer_answer_is_a_reject_and_its_cached_copy_never_crashes_a_resume(scripted_server,
                                                                                       one_trajectory, tmp_path):
    answer = json.dumps(GOOD_EDITS).replace('"step": 1', '"step": ' + BIG)
    scripted_server.script = lambda request: answer
    for out in (tmp_path / "a", tmp_path / "a", tmp_path / "b"):  # a resume, and a new run reading the cache
        result = CliRunner().invoke(main, run_args(scripted_server, one_trajectory, out))
        assert result.exit_code == 0, result.output
        rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
        assert [r["codes"] for r in rejects] == [["parse_error"]]


def test_a_huge_integer_in_an_input_line_is_a_file_line_error(tmp_path):
    path = tmp_path / "input.jsonl"
    path.write_text('{"id": "t1", "question": "q", "steps": ["a"], "n": ' + BIG + "}\n")
    result = CliRunner().invoke(main, ["render", "--category", "counterfactual", "--input", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:1:" in result.output and "5000 digits" in result.output


def test_a_huge_integer_in_a_manifest_is_exit_2(tmp_path):
    run_dir = make_run(tmp_path / "run")
    (run_dir / "manifest.json").write_text('{"n": ' + BIG + "}", encoding="utf-8")
    result = CliRunner().invoke(main, ["status", str(run_dir)])
    assert result.exit_code == 2, result.output
    assert "manifest.json" in result.output and "Traceback" not in result.output


def test_a_huge_integer_in_a_received_candidates_file_is_skipped(tmp_path):
    run_dir = make_run(tmp_path / "run")
    with (run_dir / "candidates.jsonl").open("a", encoding="utf-8") as handle:
        handle.write('{"id": ' + BIG + "}\n")
    result = CliRunner().invoke(main, ["stats", str(run_dir)])
    assert result.exit_code == 0, result.output


def _plant(run_dir: Path, name: str, victim: Path) -> None:
    target = run_dir / name
    target.unlink(missing_ok=True)
    target.symlink_to(victim)


@pytest.mark.parametrize("name", ["rejects.jsonl", "verify.jsonl", "batches.jsonl"])
def test_a_side_file_that_is_a_symlink_is_refused_and_its_target_untouched(tmp_path, name):
    from injector.records.directory import RunDirectory

    run_dir = make_run(tmp_path / "run")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\nwhole")
    _plant(run_dir, name, victim)
    directory = RunDirectory(run_dir)
    with pytest.raises(Exception) as caught:
        directory.append_line(name, {"x": 1})
    assert "symbolic link" in str(caught.value) or "regular file" in str(caught.value)
    assert victim.read_text() == "keep me\nwhole"


def test_a_planted_temporary_symlink_is_replaced_not_followed(tmp_path):
    from injector.util.safe_files import write_replacing

    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    (tmp_path / "verify-summary.json.tmp").symlink_to(victim)
    write_replacing(tmp_path / "verify-summary.json", b"{}\n")
    assert victim.read_text() == "keep me"
    assert (tmp_path / "verify-summary.json").read_bytes() == b"{}\n"


def test_a_review_store_that_is_a_symlink_to_another_database_is_refused(tmp_path):
    run_dir = make_run(tmp_path / "run")
    other = tmp_path / "other.sqlite"
    sqlite3.connect(other).execute("CREATE TABLE mine (x)").connection.commit()
    before = other.read_bytes()
    _plant(run_dir, "review.sqlite", other)
    result = CliRunner().invoke(main, ["review", str(run_dir), "--export", str(tmp_path / "x.jsonl")])
    assert result.exit_code == 2, result.output
    assert "symbolic link" in result.output
    assert other.read_bytes() == before


@pytest.mark.parametrize("kind", ["fifo", "dev_zero"])
@pytest.mark.parametrize("name", ["rejects.jsonl", "verify.jsonl", "manifest.json"])
def test_a_side_file_that_is_a_fifo_or_dev_zero_is_exit_2_not_a_hang(tmp_path, kind, name):
    run_dir = make_run(tmp_path / "run")
    target = run_dir / name
    target.unlink(missing_ok=True)
    if kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    for command in (["stats", str(run_dir)], ["status", str(run_dir)],
                    ["build", str(run_dir), "--include-unreviewed", "--out", str(tmp_path / "split")]):
        result = CliRunner().invoke(main, command)
        # Refused with the file named, or not needed by the command (each looks for regular files only): no hang.
        assert result.exit_code in (0, 2) and "Traceback" not in result.output, (command, result.output)
        if result.exit_code == 2:
            assert name in result.output
    if name == "rejects.jsonl":  # every command reads it: refused
        assert result.exit_code == 2


@pytest.mark.parametrize("classification", ["../../escaped", "/tmp/absolute_escape", "Not_An_Id"])
def test_build_writes_nothing_outside_out_for_a_forged_classification(tmp_path, classification):
    run_dir = make_run(tmp_path / "run")
    lines = (run_dir / "candidates.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["classification"] = classification
    (run_dir / "candidates.jsonl").write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    before = {p for p in tmp_path.rglob("*")}
    out = tmp_path / "deep" / "er" / "split"
    result = CliRunner().invoke(main, ["build", str(run_dir), "--include-unreviewed", "--out", str(out)])
    assert result.exit_code == 2, result.output
    assert "not a category of the run's taxonomy" in result.output
    assert not list(tmp_path.rglob("escaped*")) and not Path("/tmp/absolute_escape.jsonl").exists()
    assert {p for p in tmp_path.rglob("*")} - before <= {p for p in tmp_path.rglob("*") if out in p.parents}


@pytest.mark.parametrize("text, words", [
    ("cooldown_seconds: .nan\ndeployments:\n  - model: openai/a\n", "cooldown_seconds must be a finite"),
    ("deployments:\n  - model: openai/a\n    rpm: .inf\n", "`rpm` must be a finite"),
    ("model: sk-abcdefghijklmnopqrstuvwxyz0123456789\ndeployments:\n  - model: openai/a\n", "looks like an API key"),
])
def test_a_deployments_file_with_nan_inf_or_a_key_is_refused_with_file_line(tmp_path, text, words):
    from injector.engines.deployments import load_deployments
    from injector.util.errors import InputError

    path = tmp_path / "deployments.yaml"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        load_deployments(path)
    assert words in str(caught.value) and f"{path}:" in str(caught.value)
    assert "abcdefghijklmnop" not in str(caught.value)
