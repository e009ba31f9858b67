"""`SplitRow`: the rows `inject build` writes and `inject eval` reads, as one pydantic model. A split written before
the model existed (tests/fixtures/split_from_main) still reads, and a build today writes the same rows."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.cli.commands import main
from injector.evaluate.splits import load_split
from injector.model.split_row import SplitRow

OLD = Path(__file__).parent / "fixtures" / "split_from_main"


def _records(directory: Path) -> dict[str, list[dict]]:
    return {path.name: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            for path in sorted((directory / "jsonl").glob("*.jsonl"))}


def _old_columns(written: dict, old: dict) -> list:
    """`written`'s columns that `old` has, in `written`'s order; a column added since must have been added only."""
    return [(key, value) for key, value in written.items() if key in old]


def test_every_row_of_an_old_split_is_a_split_row_and_round_trips():
    records = [record for rows in _records(OLD).values() for record in rows]
    assert len(records) == 5
    for record in records:
        # every column is a field of the model (nothing left out), written back unchanged and in the same order;
        # columns added since (problem_key) get their defaults
        written = SplitRow.from_record(record).record()
        assert _old_columns(written, record) == list(record.items())
        assert {key: written[key] for key in set(written) - set(record)} == {"problem_key": ""}


@pytest.mark.parametrize("path", [OLD, OLD / "jsonl"], ids=["dataset", "jsonl"])
def test_an_old_split_still_reads(path):
    loaded = load_split(path)
    assert len(loaded.items) == 5 and loaded.formats == {"split"}
    kinds = sorted(item.kind for item in loaded.items)
    assert kinds == ["correct", "correct", "error", "error", "error"]
    counterfactual = next(item for item in loaded.items if item.category == "counterfactual")
    assert counterfactual.error_steps == frozenset({4, 5, 6}) and counterfactual.first_error == 4


def test_a_build_today_writes_the_rows_main_wrote_and_only_adds_columns(tmp_path):
    run = tmp_path / "run"  # the run's directory name is a column
    shutil.copytree(OLD / "run", run)
    result = CliRunner().invoke(main, ["build", str(run), "--out", str(tmp_path / "split"), "--include-unreviewed",
                                       "--include-sources"])
    assert result.exit_code == 0, result.output
    new, old = _records(tmp_path / "split"), _records(OLD)
    assert list(new) == list(old) == ["correct.jsonl", "counterfactual.jsonl", "redundancy.jsonl"]
    for name in old:
        assert len(new[name]) == len(old[name])
        for written, before in zip(new[name], old[name]):
            # the same values in the same order; columns added since come on top (problem_key: the source problem)
            assert _old_columns(written, before) == list(before.items())
            assert set(written) - set(before) == {"problem_key"} and written["problem_key"]


def test_a_wrong_column_names_its_line(tmp_path):
    rows = _records(OLD)["counterfactual.jsonl"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[0], "id": "other", "sample": "first"}) + "\n")
    result = CliRunner().invoke(main, ["eval", str(bad), "--scores", str(tmp_path / "none.jsonl"),
                                       "--out", str(tmp_path / "report")])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {bad}:2: `sample`: Input should be a valid integer")
    assert "Traceback" not in result.output


def test_other_columns_are_left_out_and_minimal_rows_read():
    row = SplitRow.from_record({"id": "a", "category": "redundancy", "modified_process": ["x"], "error_steps": [1],
                                "score": 0.3})
    assert row.id == "a" and row.model_extra is None and "score" not in row.record()


def test_runs_whose_manifests_lack_a_config_hash_are_refused_as_copies_not_crashed(tmp_path):
    # The same run given twice, its manifest without `config_hash`: the ids clash, the suffix is empty, and the
    # build refuses them as one run given twice (it crashed on the missing hash).
    runs = []
    for name in ("a", "b"):
        run = tmp_path / name
        shutil.copytree(OLD / "run", run)
        manifest = json.loads((run / "manifest.json").read_text())
        del manifest["config_hash"]
        (run / "manifest.json").write_text(json.dumps(manifest))
        runs.append(str(run))
    result = CliRunner().invoke(main, ["build", *runs, "--out", str(tmp_path / "split"), "--include-unreviewed"])
    assert result.exit_code == 2, result.output
    assert "made with the same configuration" in result.output and "give each run once" in result.output
