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

from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
from injector.engines.offline import WITHDRAWN_OPERATORS
from injector.cli.commands import main
from injector.records.directory import RunDirectory
from injector.records.models import Candidate, Rejection
from injector.curate.review.server import make_server
from injector.curate.review.session import ReviewSession
from injector.curate.review.store import Decision, ReviewStore

PRM800K = Path(__file__).parent / "fixtures" / "prm800k" / "prm800k-real-examples.jsonl"
QUESTION = "Maya buys 4 notebooks at $\\$2.75$ each. She pays with a $\\$20$ bill. How much change does she get?"
STEPS = ["The notebooks cost $4 \\cdot 2.75 = 11$ dollars.", "Her change is $20 - 11 = 9$ dollars.",
         "So she gets $9$ dollars back.\n\n# Answer\n\n9"]


def offline_run(out: Path, categories: list[str], limit: int = 4, source: Any = None) -> Path:
    taxonomy = Taxonomy.load()
    run(source if source is not None else load_trajectories(),
        RunSpec(taxonomy=taxonomy, categories=taxonomy.select(categories), out=out, limit=limit), OfflineEngine(operators=WITHDRAWN_OPERATORS))
    return out


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return offline_run(tmp_path_factory.mktemp("typed") / "run", ["step_contradiction", "missing_condition"])


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

def test_stats_of_a_split_counts_the_rows_reviewers_accepted(tmp_path: Path) -> None:
    copy = offline_run(tmp_path / "run", ["step_contradiction"], limit=15)
    ids = [c["id"] for c in lines(copy / "candidates.jsonl") if c["category"] == "step_contradiction"]
    assert len(ids) >= 3  # some accepted, some left unreviewed
    store = ReviewStore(copy)
    for cid in ids[:2]:
        store.record(Decision(id=cid, decision="accept", reviewer="ann"))
    split = tmp_path / "split"
    built = CliRunner().invoke(main, ["build", str(copy), "--out", str(split), "--include-unreviewed"])
    assert built.exit_code == 0, built.output
    result = CliRunner().invoke(main, ["stats", str(split), "--json"])
    assert result.exit_code == 0, result.output
    numbers = json.loads(result.output[: result.output.rindex("}") + 1])
    row = numbers["categories"]["step_contradiction"]
    assert (row["accepted"], row["unreviewed"], row["in_split"]) == (2, len(ids) - 2, len(ids))
    table = CliRunner().invoke(main, ["stats", str(split)]).output
    line = next(line for line in table.splitlines() if line.startswith("step_contradiction"))
    assert line.split()[1:7] == [str(len(ids)), "2", "0", str(len(ids) - 2), "0", str(len(ids))]


# -- bug (c): ground truth of PRM800K sources ----------------------------------------------------------------------

def test_a_split_keeps_the_ground_truth_of_prm800k_sources(tmp_path: Path) -> None:
    source = load_trajectories(str(PRM800K))
    truths = {t.id: t.answer for t in load_trajectories(str(PRM800K))}
    assert truths and all(truths.values())
    run_dir = offline_run(tmp_path / "run", ["redundancy"], limit=10, source=source)
    split = tmp_path / "split"
    assert CliRunner().invoke(main, ["build", str(run_dir), "--out", str(split), "--include-unreviewed"]
                              ).exit_code == 0
    rows = lines(split / "jsonl" / "redundancy.jsonl")
    assert rows and {row["trajectory_id"]: row["ground_truth"] for row in rows} == {
        row["trajectory_id"]: truths[row["trajectory_id"]] for row in rows}


# -- received run directories never crash a reader ------------------------------------------------------------------

DEEP = "[" * 200 + "]" * 200
CANDIDATES, REJECTS = "candidates", "rejects"
BAD_LINES: list[tuple[Any, set[str]]] = [  # (the line: a str as is, anything else as JSON; for which file it is bad)
    (b"\xff\xfe garbage \x00 bytes", {CANDIDATES, REJECTS}),
    ([1, 2], {CANDIDATES, REJECTS}), ("a string", {CANDIDATES, REJECTS}), (42, {CANDIDATES, REJECTS}),
    (None, {CANDIDATES, REJECTS}), ({"id": "x"}, {CANDIDATES, REJECTS}),  # most fields missing
    ("{RECORD, error_steps: 'x'}", {CANDIDATES}), ("{RECORD, modified_process: [1, 2]}", {CANDIDATES}),
    ("{RECORD, sample: 'many'}", {CANDIDATES, REJECTS}), ("{RECORD, provenance: 'x'}", {CANDIDATES, REJECTS}),
    ("{RECORD, images: [3]}", {CANDIDATES}), ("{RECORD, explanations: {'a': 1}}", {CANDIDATES}),
    ("{RECORD, warnings: 5}", {CANDIDATES}), ("{RECORD, error_steps: [99]}", {CANDIDATES}),
    ("{RECORD, original_process: []}", {CANDIDATES}), ("{RECORD, codes: 'x'}", {REJECTS}),
    ("{RECORD, messages: [1]}", {REJECTS}), ("{RECORD, category: null}", {CANDIDATES, REJECTS}),
    (DEEP, {CANDIDATES, REJECTS}),
    # provenance is typed: usage, cost and attempts of the wrong type make no record
    ("{RECORD, provenance: {'attempts': 5, 'usage': 'x', 'cost': 'free', 'model': ['m']}}", {CANDIDATES, REJECTS}),
]


def _bad_line(template: dict, bad: Any) -> bytes:
    if isinstance(bad, bytes):
        return bad
    if isinstance(bad, str) and bad.startswith("{RECORD, "):
        name, value = bad[len("{RECORD, "):-1].split(": ", 1)
        return json.dumps({**template, name: json.loads(value.replace("'", '"'))}).encode()
    if bad == DEEP:
        return DEEP.encode()
    return json.dumps(bad).encode()


def _with_bad_lines(path: Path, kind: str) -> list[int]:
    """Append every kind of line to a JSONL file of ours, then a record with fields of its engine's own in its
    provenance (valid). Returns the numbers of the lines that are no record of this file's kind."""
    good = path.read_bytes().splitlines()
    template = json.loads(good[0])
    engine_own = {**template, "id": template["id"] + "-engine-own",
                  "provenance": {"engine": "mine", "operator": ["m"], "knobs": {"a": 1}}}
    added = [_bad_line(template, line) for line, _ in BAD_LINES]
    path.write_bytes(b"\n".join([*good, *added, json.dumps(engine_own).encode()]) + b"\n")
    return [len(good) + n for n, (_, bad_for) in enumerate(BAD_LINES, 1) if kind in bad_for]


def _sqlite(path: Path, *statements: str) -> None:
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as db:
        for statement in statements:
            db.execute(statement)
    db.close()


GOOD_ROW = "INSERT INTO decisions VALUES (1, 'ID', 'accept', '', NULL, NULL, 'ann', '2026-01-01T00:00:00.000+00:00')"
CORRUPTIONS = {
    "manifest: garbage bytes": lambda d: (d / "manifest.json").write_bytes(b"\xff\x00 not json"),
    "manifest: not an object": lambda d: (d / "manifest.json").write_text("[1, 2]"),
    "manifest: wrong types": lambda d: (d / "manifest.json").write_text(json.dumps(
        {"config": [], "config_hash": 5, "categories": [1], "image_base": 7, "status": {}})),
    "manifest: wrong inner types": lambda d: (d / "manifest.json").write_text(json.dumps(
        {"config": {"taxonomy_path": 5, "taxonomy": []}, "categories": {"counterfactual": {"name": 5},
                                                                         "x": "y"}, "image_base": ""})),
    "manifest: missing": lambda d: (d / "manifest.json").unlink(),
    "candidates: bad lines": lambda d: _with_bad_lines(d / "candidates.jsonl", CANDIDATES),
    "candidates: all garbage": lambda d: (d / "candidates.jsonl").write_bytes(b"\x00\xff" * 100),
    "candidates: a directory": lambda d: ((d / "candidates.jsonl").unlink(), (d / "candidates.jsonl").mkdir()),
    "rejects: bad lines": lambda d: _with_bad_lines(d / "rejects.jsonl", REJECTS),
    "rejects: all garbage": lambda d: (d / "rejects.jsonl").write_bytes(b"\x00\xff" * 100),
    "review.sqlite: garbage": lambda d: (d / "review.sqlite").write_bytes(b"SQLite format 3\x00" + b"\xff" * 500),
    "review.sqlite: other columns": lambda d: _sqlite(d / "review.sqlite", "CREATE TABLE decisions (x, y)"),
    "review.sqlite: missing columns": lambda d: _sqlite(d / "review.sqlite", "CREATE TABLE decisions (id TEXT)",
                                                        "INSERT INTO decisions VALUES ('a')"),
    "review.sqlite: malformed rows": lambda d: _sqlite(
        d / "review.sqlite",
        "CREATE TABLE decisions (seq INTEGER PRIMARY KEY, id, decision, reason, corrected_error_steps, "
        "edited_steps, reviewer, time)",
        GOOD_ROW.replace("(1,", "(2,").replace("'accept', ''", "'accept', NULL"),
        GOOD_ROW.replace("(1,", "(3,").replace("NULL, NULL", "'not json', NULL"),
        GOOD_ROW.replace("(1,", "(4,").replace("NULL, NULL", "NULL, '[1]'"),
        GOOD_ROW.replace("(1,", "(5,").replace("NULL, NULL", "NULL, '{\"x\": \"a\"}'"),
        GOOD_ROW.replace("(1,", "(6,").replace("'accept'", "'maybe'"),
        GOOD_ROW.replace("(1,", "(7,").replace("'2026-01-01T00:00:00.000+00:00'", "5"),
        GOOD_ROW.replace("(1,", "(8,").replace("NULL, NULL", f"'{DEEP}', NULL"),
        GOOD_ROW.replace("(1,", "(9,").replace("NULL, NULL", "'[0, true]', NULL"),
        GOOD_ROW.replace("(1,", "(10,").replace("'ID'", "5"),
        GOOD_ROW.replace("(1,", "(11,").replace("NULL, NULL", "x'00ff', NULL"),
    ),
}


@pytest.fixture(scope="module")
def received(tmp_path_factory) -> Path:
    """A run with candidates, rejects and one reviewer decision, as someone might send it."""
    out = offline_run(tmp_path_factory.mktemp("received") / "run", ["step_contradiction", "missing_condition"])
    first = lines(out / "candidates.jsonl")[0]["id"]
    ReviewStore(out).record(Decision(id=first, decision="accept", reviewer="ann"))
    return out


def _serve_every_page(run_dir: Path) -> list[int]:
    """Statuses of the review app's pages for a run: the list, every candidate, the decisions, an image, a POST."""
    server = make_server([run_dir])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    statuses = []

    def fetch(path: str, data: dict | None = None) -> int:
        request = urllib.request.Request(
            f"http://127.0.0.1:{server.port}{path}", data=None if data is None else json.dumps(data).encode(),
            headers={"X-Review-Token": server.token, "Content-Type": "application/json"})
        try:
            with opener.open(request, timeout=60) as response:
                return response.status
        except urllib.error.HTTPError as error:
            return error.code

    try:
        keys = [entry.key for entry in server.session.entries]
        from urllib.parse import quote

        statuses += [fetch("/"), fetch("/api/decisions"), fetch("/?status=accepted")]
        statuses += [fetch(f"/?key={quote(key)}") for key in keys]
        statuses += [fetch(f"/image?key={quote(key)}&n=0") for key in keys[:3]]
        if keys:
            statuses.append(fetch("/api/decide", {"key": keys[0], "decision": "accept",
                                                  "edited_steps": {"1": "An edited first step."}}))
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
    return statuses


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_a_corrupt_run_directory_never_crashes_a_reader(received: Path, tmp_path: Path, corruption: str,
                                                        caplog: pytest.LogCaptureFixture) -> None:
    """review (the app and --export), build and stats on a received run directory with one file corrupted: exit
    0 (bad lines skipped, each named FILE:LINE) or exit 2 with a one-line message; never an internal error."""
    directory = tmp_path / "run"
    shutil.copytree(received, directory)
    first = lines(received / "candidates.jsonl")[0]["id"]
    corrupt = CORRUPTIONS[corruption]
    if corruption == "review.sqlite: malformed rows":
        corrupt(directory)
        with sqlite3.connect(directory / "review.sqlite") as db:  # one good row among the bad, naming a candidate
            db.execute(GOOD_ROW.replace("'ID'", "?"), (first,))
        db.close()
    else:
        bad_lines = corrupt(directory)
    commands = {
        "review --export": ["review", str(directory), "--export", str(tmp_path / "decisions.jsonl")],
        "build": ["build", str(directory), "--out", str(tmp_path / "split"), "--include-unreviewed",
                  "--include-sources"],
        "stats": ["stats", str(directory), "--json"],
    }
    for name, args in commands.items():
        result = CliRunner().invoke(main, args)
        assert result.exit_code in (0, 2), f"{name}: exit {result.exit_code}: {result.output}"
        assert "internal error" not in result.output and "Traceback" not in result.output, (name, result.output)
        if result.exit_code == 2:
            assert len([line for line in result.output.splitlines() if line.startswith("error: ")]) == 1, name
        # The readers of each file name every bad line (build reads candidates strictly: it stops at the first).
        readers = {"candidates: bad lines": ("review --export", "stats"), "rejects: bad lines": ("build", "stats")}
        if name in readers.get(corruption, ()):
            path = directory / ("candidates.jsonl" if corruption.startswith("candidates") else "rejects.jsonl")
            named = [n for n in bad_lines if f"{path}:{n}:" in caplog.text]
            assert named == bad_lines, (name, sorted(set(bad_lines) - set(named)))
        caplog.clear()
    try:
        ReviewSession([directory])
    except Exception as exc:  # noqa: BLE001 - the assertion says which
        assert type(exc).__name__ == "UserError", repr(exc)  # the CLI's one line, exit 2
        return
    assert all(status != 500 for status in _serve_every_page(directory))


# -- several writers of one run directory --------------------------------------------------------------------------

WRITER = r"""
import sys
from injector.records.directory import RunDirectory
from injector.records.models import Candidate
directory, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.stdin.readline()  # the start signal: both writers begin together
run_dir = RunDirectory(directory)
steps = ["x" * 3000, "y" * 3000, "z" * 3000]  # lines of ~18 KB: far more than one page or pipe buffer
for k in range(count):
    run_dir.append(Candidate(
        original_question="q", modified_question="q", original_process=steps, modified_process=steps,
        modified_steps=[], error_steps=[1], reason="r", idx=name, question="q", classification="c",
        id=f"{name}::c::{k}", category="c", trajectory_id=name, sample=k))
run_dir.close_files()
"""


def test_two_processes_append_to_one_run_directory_at_once(tmp_path: Path) -> None:
    """Two writers of one run directory (e.g. two worker processes) append concurrently; a reader sees every
    record of both, each once, and no line is torn or interleaved."""
    directory = tmp_path / "run"
    directory.mkdir()
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(directory), name, "300"],
                                stdin=subprocess.PIPE, text=True) for name in ("a", "b")]
    for writer in writers:
        writer.stdin.write("go\n")
        writer.stdin.flush()
    for writer in writers:
        writer.stdin.close()
        assert writer.wait() == 0
    raw = (directory / "candidates.jsonl").read_bytes().splitlines()
    assert len(raw) == 600 and all(json.loads(line)["modified_process"][0] == "x" * 3000 for line in raw)
    ids = [c.id for c in RunDirectory(directory).candidates()]
    assert sorted(ids) == sorted(f"{name}::c::{k}" for name in ("a", "b") for k in range(300))


def _record(number: int) -> Rejection:
    return Rejection(id=f"t{number}::c::0", trajectory_id=f"t{number}", idx=f"t{number}", category="c", sample=0,
                     codes=["too_many_changes"])


def test_a_writer_killed_mid_line_does_not_cost_another_writer_its_record(tmp_path: Path) -> None:
    """A writer killed halfway through a line leaves it without its newline; the next append by another writer
    (which never reopened the file) cuts it off instead of gluing its own record to it."""
    first, second = RunDirectory(tmp_path), RunDirectory(tmp_path)
    second.append(_record(1))  # the second writer's descriptor is open from here on
    with (tmp_path / "rejects.jsonl").open("ab") as killed:
        killed.write(_record(2).model_dump_json().encode()[:40])  # what a writer killed mid-line leaves
    second.append(_record(3))
    first.append(_record(4))
    assert [r.id for r in RunDirectory(tmp_path).rejections()] == ["t1::c::0", "t3::c::0", "t4::c::0"]
    assert (tmp_path / "rejects.jsonl").read_bytes().count(b"\n") == 3


def test_compacting_rejects_loses_no_record_of_another_writer(tmp_path: Path) -> None:
    """`compact_rejects` replaces rejects.jsonl; a writer whose descriptor still points at the old file reopens it
    rather than appending into a file no one will read."""
    compactor, helper = RunDirectory(tmp_path), RunDirectory(tmp_path)
    compactor.append(_record(1))
    compactor.append(_record(1))  # tried again: compaction drops the first
    helper.append(_record(2))
    compactor.compact_rejects()
    helper.append(_record(3))
    helper.close_files()
    assert [r.id for r in RunDirectory(tmp_path).rejections()] == ["t1::c::0", "t2::c::0", "t3::c::0"]


def test_a_second_run_is_still_refused_while_helpers_join(tmp_path: Path) -> None:
    """Helpers append without the run lock; two runs (`prepare`) of one directory still exclude each other, and a
    helper joins only the run of its own configuration."""
    from injector.util.errors import UserError
    from injector.records.models import RunManifest

    first = RunDirectory(tmp_path / "run")
    first.prepare("hash")
    first.write_manifest(RunManifest(command=[], config={}, config_hash="hash", toolkit_version="0", started="now"))
    try:
        with pytest.raises(UserError, match="being written by another inject process"):
            RunDirectory(tmp_path / "run").prepare("hash")
        helper = RunDirectory(tmp_path / "run")
        helper.join("hash")
        helper.append(_record(1))
        helper.close_files()
        with pytest.raises(UserError, match="different configuration"):
            RunDirectory(tmp_path / "run").join("other")
        with pytest.raises(UserError, match="not a run directory"):
            RunDirectory(tmp_path / "elsewhere").join()
    finally:
        first.release()
    assert [r.id for r in RunDirectory(tmp_path / "run").rejections()] == ["t1::c::0"]


# -- split ids when a build combines runs over the same input -------------------------------------------------------

def test_split_ids_are_unique_when_runs_over_one_input_are_combined(tmp_path: Path) -> None:
    """Two runs over the same input (other seeds) give the same unit ids; the split suffixes each repeated id with
    its run's config hash, so ids are unique and do not depend on the order the runs are given."""
    taxonomy = Taxonomy.load()
    runs = []
    for seed in (0, 1):
        out = tmp_path / f"seed{seed}"
        run(load_trajectories(), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["step_contradiction"]), out=out,
                                         limit=3, seed=seed), OfflineEngine(operators=WITHDRAWN_OPERATORS))
        runs.append(out)
    hashes = [json.loads((out / "manifest.json").read_text())["config_hash"] for out in runs]
    assert hashes[0] != hashes[1]
    splits = []
    for order in (runs, runs[::-1]):
        split = tmp_path / f"split-{len(splits)}"
        result = CliRunner().invoke(main, ["build", *map(str, order), "--out", str(split), "--include-unreviewed"])
        assert result.exit_code == 0, result.output
        splits.append(lines(split / "jsonl" / "step_contradiction.jsonl"))
    ids = [row["id"] for row in splits[0]]
    unit_ids = [c["id"] for c in lines(runs[0] / "candidates.jsonl")]
    assert len(ids) == len(set(ids)) == 2 * len(unit_ids)
    assert sorted(ids) == sorted(f"{uid}~{h[:8]}" for uid in unit_ids for h in hashes)
    assert sorted(ids) == sorted(row["id"] for row in splits[1])
    # one run alone keeps its ids as they are
    single = tmp_path / "single"
    assert CliRunner().invoke(main, ["build", str(runs[0]), "--out", str(single), "--include-unreviewed"]).exit_code == 0
    assert sorted(row["id"] for row in lines(single / "jsonl" / "step_contradiction.jsonl")) == sorted(unit_ids)


def test_the_same_run_given_twice_is_refused(run_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(run_dir, copy)
    result = CliRunner().invoke(main, ["build", str(run_dir), str(copy), "--out", str(tmp_path / "split"),
                                       "--include-unreviewed"])
    assert result.exit_code == 2 and "made with the same configuration" in result.output, result.output
    assert not (tmp_path / "split").exists()
