"""Duplicate trajectory ids (issue 12, item 7): two different records sharing an id would give two candidates with
the same unit id; they are a FILE:LINE error naming both lines, or with `--duplicate-ids first` the later ones are
skipped and counted."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import load_trajectories
from injector.cli.commands import main
from injector.util.errors import InputError, UserError

QUESTION = "A pen costs 2 dollars. How much do 3 pens cost?"


def record(trajectory_id: str, price: int) -> dict:
    total = 3 * price
    return {"id": trajectory_id, "question": QUESTION.replace("2", str(price)),
            "steps": [f"Each pen costs {price} dollars.", f"So 3 pens cost $3 \\cdot {price} = {total}$ dollars.\n\n"
                      f"# Answer\n\n{total}"]}


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def shared_id(tmp_path: Path) -> Path:
    return write(tmp_path / "input.jsonl", [record("t1", 2), record("t2", 4), record("t1", 5)])


def run_args(path: Path, out: Path, *extra: str) -> list[str]:
    # numerical_calculation (projudge): an arithmetic slip, which the offline engine finds in these two-step records
    return ["run", "--taxonomy", "projudge", "--category", "numerical_calculation", "--input", str(path), "--out",
            str(out), *extra]


def test_two_records_with_one_id_are_a_file_line_error_naming_both(shared_id: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, run_args(shared_id, tmp_path / "run"))
    assert result.exit_code == 2
    assert f"{shared_id}:3: trajectory id 't1' is also the id of a different record (line 1)" in result.output
    assert "--duplicate-ids first" in result.output
    # The run streams: units before the bad line may be written, never one from the record that reused the id.
    path = tmp_path / "run" / "candidates.jsonl"
    written = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    assert len({c["id"] for c in written}) == len(written)
    assert all(c["original_process"] != record("t1", 5)["steps"] for c in written)


def test_first_keeps_the_first_and_counts_the_rest_as_skipped(shared_id: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, run_args(shared_id, out, "--duplicate-ids", "first"))
    assert result.exit_code == 0, result.output
    assert "read 3, selected 2, skipped 1 (duplicate_id 1)" in result.output
    candidates = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert sorted(c["id"] for c in candidates) == ["t1::numerical_calculation::0", "t2::numerical_calculation::0"]
    first = next(c for c in candidates if c["trajectory_id"] == "t1")
    assert first["original_process"] == record("t1", 2)["steps"]  # the first record, not the later one
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"]["skipped"] == {"duplicate_id": 1}


def test_render_takes_the_option_too(shared_id: Path) -> None:
    refused = CliRunner().invoke(main, ["render", "--category", "counterfactual", "--input", str(shared_id)])
    assert refused.exit_code == 2 and ":3: trajectory id 't1'" in refused.output
    kept = CliRunner().invoke(main, ["render", "--category", "counterfactual", "--input", str(shared_id),
                                     "--duplicate-ids", "first"])
    assert kept.exit_code == 0 and kept.output.count("=== t1 / counterfactual ===") == 1


def test_identical_records_are_still_dropped_as_duplicates(tmp_path: Path) -> None:
    path = write(tmp_path / "input.jsonl", [record("t1", 2), record("t1", 2), record("t9", 2)])
    source = load_trajectories(path)
    assert [t.id for t in source] == ["t1"] and source.stats.skipped == {"duplicate": 2}


def test_a_shared_id_across_files_names_the_other_file(tmp_path: Path) -> None:
    folder = tmp_path / "inputs"
    folder.mkdir()
    write(folder / "a.jsonl", [record("t1", 2)])
    write(folder / "b.jsonl", [record("t2", 3), record("t1", 4)])
    with pytest.raises(InputError) as caught:
        list(load_trajectories(folder))
    assert caught.value.path == str(folder / "b.jsonl") and caught.value.line == 2
    assert f"({folder / 'a.jsonl'}:1)" in caught.value.message


def test_an_unknown_policy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="duplicate-ids policy 'last'"):
        load_trajectories(write(tmp_path / "x.jsonl", [record("t1", 2)]), duplicate_ids="last")


def test_the_duplicate_checks_hold_under_a_hundred_bytes_a_trajectory(tmp_path: Path) -> None:
    """The checks remember every trajectory read (its content's digest; its id, with where it was first used): as a
    set of digests and a dict of id strings that was ~340 bytes a trajectory, what grew most in a resume of a large
    input; as two `UnitIds` of strings ~140; as two `Digests` ~80. Measured with tracemalloc while the source is
    suspended mid-file (what it holds for the rest)."""
    import itertools
    import tracemalloc

    path = tmp_path / "many.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for n in range(20_000):
            out.write(json.dumps({"id": f"problem-{n:06d}-solution-abcdefgh", "question": f"What is {n} + 1?",
                                  "steps": [f"{n} + 1 = {n + 1}.", f"# Answer\n\n{n + 1}"]}) + "\n")
    trajectories = iter(load_trajectories(path, "trajectories"))
    next(trajectories)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        read = sum(1 for _ in itertools.islice(trajectories, 19_990))
        per_trajectory = (tracemalloc.get_traced_memory()[0] - before) / read
    finally:
        tracemalloc.stop()
    assert read == 19_990
    assert per_trajectory < 110, per_trajectory
