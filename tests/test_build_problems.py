"""Splits keep a source problem on one side (issue 25): PRMBench echoes one problem's solution differently in
each category file, so its copies load as several trajectories; `inject build` assigns train/test by the problem
key every candidate records, and `inject audit SPLIT_DIR` reports any problem found on two sides.
Fixture: tests/fixtures/prmbench_echoes (PRMBench, Apache-2.0, see its ATTRIBUTION.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import OfflineEngine, RunSpec, Taxonomy, run
from injector.cli.commands import main
from injector.engines.offline import Perturbation, insert
from injector.model.problem import row_problem_key
from injector.sources import load_trajectories

ECHOES = Path(__file__).parent / "fixtures" / "prmbench_echoes"


@pytest.fixture(scope="module")
def echo_run(tmp_path_factory) -> Path:
    """A redundancy run over both category files' echoes of eight problems (16 trajectories): an operator that
    applies everywhere (a restatement of the question after step 1) stands in, so each echo gives a candidate."""
    out = tmp_path_factory.mktemp("runs") / "echoes"
    taxonomy = Taxonomy.load()
    trajectories = list(load_trajectories(ECHOES, "prmbench"))
    assert len(trajectories) == 16 and len({t.meta["idx"] for t in trajectories}) == 8

    def restate(trajectory):
        return [lambda rng: Perturbation("restate", [insert(1, f"Recall the question: {trajectory.question}")],
                                         "Step 2 only restates the question.")]

    run(trajectories, RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy"]), out=out),
        OfflineEngine(operators={"redundancy": restate}))
    return out


def _rows(split: Path, name: str) -> list[dict]:
    return [json.loads(line) for line in (split / "jsonl" / f"{name}.jsonl").read_text().splitlines()]


def test_every_candidate_records_its_source_problem(echo_run):
    candidates = [json.loads(line) for line in (echo_run / "candidates.jsonl").read_text().splitlines()]
    assert candidates and all(c["problem_key"] == f"idx:{c['idx']}" for c in candidates)
    # The two echoes of one problem are two trajectories, one problem.
    by_problem: dict[str, set[str]] = {}
    for c in candidates:
        by_problem.setdefault(c["problem_key"], set()).add(c["trajectory_id"])
    assert len(candidates) == 16 and all(len(ids) == 2 for ids in by_problem.values())


@pytest.mark.parametrize("seed", ["0", "1", "2", "3"])
def test_train_test_keeps_each_problem_on_one_side_and_audit_agrees(echo_run, tmp_path, seed):
    out = tmp_path / "split"
    result = CliRunner().invoke(main, ["build", str(echo_run), "--out", str(out), "--include-unreviewed",
                                       "--include-sources", "--by", "train-test", "--test-size", "0.5",
                                       "--seed", seed], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    train, test = _rows(out, "train"), _rows(out, "test")
    assert train and test
    assert not {r["source_idx"] for r in train} & {r["source_idx"] for r in test}
    assert all(r["problem_key"] == f"idx:{r['source_idx']}" for r in train + test)
    audit = CliRunner().invoke(main, ["audit", str(out)])
    assert audit.exit_code == 0, audit.output
    assert "on two sides" not in audit.output


def test_audit_reports_a_problem_on_both_sides(echo_run, tmp_path):
    out = tmp_path / "split"
    CliRunner().invoke(main, ["build", str(echo_run), "--out", str(out), "--include-unreviewed", "--by",
                              "train-test", "--test-size", "0.5"], catch_exceptions=False)
    # A split built before problems were keyed: one echo of a test problem sits in train, under its own
    # trajectory id (and without a recorded problem_key, which the audit derives from idx and trajectory id).
    moved = dict(_rows(out, "test")[0])
    del moved["problem_key"]
    moved["trajectory_id"] = f"{moved['source_idx']}-otherecho"
    with (out / "jsonl" / "train.jsonl").open("a") as handle:
        handle.write(json.dumps(moved) + "\n")
    result = CliRunner().invoke(main, ["audit", str(out)])
    assert result.exit_code == 4
    assert f"problem idx:{moved['source_idx']} is in splits test (jsonl/test.jsonl:1), train (jsonl/train.jsonl:" \
        in result.output
    assert "1 source problem(s) on two sides of the split" in result.output
    assert CliRunner().invoke(main, ["audit", "--report-only", str(out)]).exit_code == 0


def test_a_split_per_category_may_hold_one_problem_in_several_categories(echo_run, tmp_path):
    out = tmp_path / "split"
    CliRunner().invoke(main, ["build", str(echo_run), "--out", str(out), "--include-unreviewed"],
                       catch_exceptions=False)
    result = CliRunner().invoke(main, ["audit", str(out)])
    assert result.exit_code == 0, result.output


def test_audit_of_a_directory_that_is_no_split_is_a_user_error(tmp_path):
    result = CliRunner().invoke(main, ["audit", str(tmp_path)])
    assert result.exit_code == 2 and "not a split directory" in result.output


def test_the_key_of_a_row_written_before_keys_were_recorded():
    prmbench = {"source_idx": "prm_train_p1_7", "idx": "prm_train_p1_7_2", "trajectory_id": "prm_train_p1_7-ab12",
                "original_question": "Q"}
    assert row_problem_key(prmbench) == "idx:prm_train_p1_7"
    assert row_problem_key({**prmbench, "problem_key": "qabc"}) == "qabc"
