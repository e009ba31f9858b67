"""Issue 29: an input that is not JSONL is named by its first bytes (a Git LFS pointer, CSV, Parquet, ...), one
FILE:LINE message with the fix, exit 2; a JSONL file is never second-guessed."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from injector.cli.commands import main
from injector.sources.sniff import not_jsonl

LFS = b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a2146\nsize 133\n"


@pytest.mark.parametrize(("content", "said"), [
    (LFS, "this is a Git LFS pointer, not the data: run `git lfs pull` in the PRM800K clone"),
    (b"id,question,steps\n1,What?,a\n", "this looks like CSV (first line: id, question, steps)"),
    (b"id\tquestion\n1\tWhat?\n", "this looks like TSV"),
    (b"PAR1\x15\x04\x15", "this is a Parquet file"),
    (b"<!DOCTYPE html>\n<html>", "this looks like HTML or XML"),
])
def test_a_file_that_is_not_jsonl_is_named(tmp_path, content, said):
    path = tmp_path / "input.jsonl"
    path.write_bytes(content)
    result = CliRunner().invoke(main, ["run", "--input", str(path), "--category", "circular_logic", "--out",
                                       str(tmp_path / "run")])
    assert result.exit_code == 2, result.output
    assert f"{path}:1: {said}" in result.output and "Traceback" not in result.output
    assert not (tmp_path / "run" / "candidates.jsonl").exists()


@pytest.mark.parametrize("line", [json.dumps({"a": 1, "b": [1, 2]}), "[1, 2, 3]", '"a, b"', "{broken, json"])
def test_json_and_broken_json_lines_are_left_to_the_json_reader(line):
    assert not_jsonl(line.encode() + b"\n") is None
