"""Run directories read typed: the bugs string-key reads caused, received (corrupt) run directories, several
writers of one run directory, and unique split ids when a build combines runs over the same input."""
from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from injector import OfflineEngine, Taxonomy, load_trajectories, run
from injector.cli import main
from injector.records import Candidate, Rejection, RunDirectory
from injector.review.server import make_server
from injector.review.session import ReviewSession
from injector.review.store import Decision, ReviewStore

PRM800K = Path(__file__).parent / "fixtures" / "prm800k" / "prm800k-real-examples.jsonl"
QUESTION = "Maya buys 4 notebooks at $\\$2.75$ each. She pays with a $\\$20$ bill. How much change does she get?"
STEPS = ["The notebooks cost $4 \\cdot 2.75 = 11$ dollars.", "Her change is $20 - 11 = 9$ dollars.",
         "So she gets $9$ dollars back.\n\n# Answer\n\n9"]


def offline_run(out: Path, categories: list[str], limit: int = 4, source: Any = None) -> Path:
    taxonomy = Taxonomy.load()
    run(source if source is not None else load_trajectories(), taxonomy=taxonomy,
        categories=taxonomy.select(categories), engine=OfflineEngine(), out=out, limit=limit)
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return offline_run(tmp_path_factory.mktemp("typed") / "run", ["counterfactual", "domain_inconsistency"])


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- typed reading ---------------------------------------------------------------------------------------------------

def test_run_directory_reads_typed_records(run_dir: Path) -> None:
    directory = RunDirectory(run_dir)
    candidates, rejections = list(directory.candidates()), list(directory.rejections())
    assert [c.id for c in candidates] == [c["id"] for c in lines(run_dir / "candidates.jsonl")]
    assert [r.id for r in rejections] == [r["id"] for r in lines(run_dir / "rejects.jsonl")]
    assert all(isinstance(c, Candidate) for c in candidates) and all(isinstance(r, Rejection) for r in rejections)
    first = candidates[0]
    answer = first.as_answer()
    assert (answer.modified_process, answer.error_steps, answer.reason) == (
        first.modified_process, first.error_steps, first.reason)
    source = first.source_trajectory()
    assert (source.id, source.question, source.steps) == (first.trajectory_id, first.original_question,
                                                          first.original_process)


def test_typed_records_are_written_as_before(run_dir: Path, tmp_path: Path) -> None:
    """Declaring the optional fields changes nothing on disk: a record read and written again is the same line."""
    copy = RunDirectory(tmp_path / "copy")
    copy.path.mkdir()
    for candidate in RunDirectory(run_dir).candidates():
        copy.append(candidate)
    copy.close_files()
    assert (tmp_path / "copy" / "candidates.jsonl").read_bytes() == (run_dir / "candidates.jsonl").read_bytes()


# -- bug (a): a correction of a candidate with explanations ---------------------------------------------------------

def projudge_run(directory: Path) -> Path:
    directory.mkdir(parents=True)
    record = Candidate(
        original_question=QUESTION, modified_question=QUESTION, original_process=STEPS,
        modified_process=[STEPS[0], "Her change is $20 - 11 = 8$ dollars.",
                          "So she gets $8$ dollars back.\n\n# Answer\n\n8"],
        modified_steps=[2, 3], error_steps=[2], reason="The subtraction is wrong.", idx="t1", question=QUESTION,
        classification="numerical_calculation", id="t1::numerical_calculation::0",
        category="numerical_calculation", trajectory_id="t1", sample=0,
        explanations={"2": "20 - 11 is 9, not 8."}, provenance={"engine": "offline"})
    (directory / "candidates.jsonl").write_text(record.model_dump_json(exclude_unset=True) + "\n")
    (directory / "manifest.json").write_text(json.dumps({"config": {}, "status": "finished"}))
    return directory


def test_a_correction_of_a_candidate_with_explanations_keeps_them(tmp_path: Path) -> None:
    """Every projudge category requires explanations; a reviewer's edit of a step used to be refused with
    `missing_explanation`, because the re-validated answer was rebuilt without them."""
    session = ReviewSession([projudge_run(tmp_path / "run")], reviewer="ann", taxonomy="projudge")
    edited = "Her change is $20 - 11 = 7$ dollars."
    decision = session.decide("0/t1::numerical_calculation::0",
                              {"decision": "accept", "edited_steps": {"2": edited}})
    assert decision.edited_steps == {2: edited}
    assert ReviewStore(tmp_path / "run").latest()["t1::numerical_calculation::0"].edited_steps == {2: edited}


# -- bug (b): stats of a split counts what reviewers accepted -------------------------------------------------------

def test_stats_of_a_split_counts_the_rows_reviewers_accepted(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    ids = [c["id"] for c in lines(copy / "candidates.jsonl") if c["category"] == "counterfactual"]
    store = ReviewStore(copy)
    for cid in ids[:2]:
        store.record(Decision(id=cid, decision="accept", reviewer="ann"))
    split = tmp_path / "split"
    built = CliRunner().invoke(main, ["build", str(copy), "--out", str(split), "--include-unreviewed"])
    assert built.exit_code == 0, built.output
    result = CliRunner().invoke(main, ["stats", str(split), "--json"])
    assert result.exit_code == 0, result.output
    numbers = json.loads(result.output[: result.output.rindex("}") + 1])
    row = numbers["categories"]["counterfactual"]
    assert (row["accepted"], row["unreviewed"], row["in_split"]) == (2, len(ids) - 2, len(ids))
    table = CliRunner().invoke(main, ["stats", str(split)]).output
    counterfactual = next(line for line in table.splitlines() if line.startswith("counterfactual"))
    assert counterfactual.split()[1:7] == [str(len(ids)), "2", "0", str(len(ids) - 2), "0", str(len(ids))]


# -- bug (c): ground truth of PRM800K sources ----------------------------------------------------------------------

def test_a_split_keeps_the_ground_truth_of_prm800k_sources(tmp_path: Path) -> None:
    source = load_trajectories(str(PRM800K))
    truths = {t.id: t.answer for t in load_trajectories(str(PRM800K))}
    assert truths and all(truths.values())
    run_dir = offline_run(tmp_path / "run", ["counterfactual"], limit=10, source=source)
    split = tmp_path / "split"
    assert CliRunner().invoke(main, ["build", str(run_dir), "--out", str(split), "--include-unreviewed"]
                              ).exit_code == 0
    rows = lines(split / "jsonl" / "counterfactual.jsonl")
    assert rows and {row["trajectory_id"]: row["ground_truth"] for row in rows} == {
        row["trajectory_id"]: truths[row["trajectory_id"]] for row in rows}
