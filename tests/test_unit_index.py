"""The run directory's persisted index of written units (records/unit_index.py): a resume reads the record files
at most once (not at all when the index matches them), an index that no longer matches its file is caught up or
rebuilt, a crash between a line and its entry is detected, and the counts equal what the records say."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
from injector.engines.offline import WITHDRAWN_OPERATORS
from injector.model.provenance import Provenance, Usage
from injector.records import jsonl, unit_index
from injector.records.directory import RunDirectory
from injector.records.models import Candidate, Rejection, RunManifest
from injector.records.unit_index import UnitIndex, index_path


def candidate(k: int, cost: float | None = 0.25) -> Candidate:
    steps = ["a", f"step {k}"]
    return Candidate(original_question="q", modified_question="q", original_process=steps, modified_process=steps,
                     modified_steps=[], error_steps=[1], reason="r", idx=f"t{k}", question="q", classification="c",
                     id=f"t{k}::c::0", category=f"c{k % 2}", trajectory_id=f"t{k}", sample=0,
                     provenance=Provenance(usage=Usage(prompt_tokens=10 + k, completion_tokens=k), cost=cost))


def reject(k: int, code: str = "too_many_changes") -> Rejection:
    return Rejection(id=f"t{k}::c::0", trajectory_id=f"t{k}", idx=f"t{k}", category=f"c{k % 2}", sample=0,
                     codes=[code], provenance=Provenance(usage=Usage(prompt_tokens=3, completion_tokens=k), cost=0.5))


def held(path: Path) -> RunDirectory:
    """The run directory as `inject run` holds it (its lock taken: it keeps the index)."""
    directory = RunDirectory(path)
    directory.prepare("hash")
    directory.write_manifest(RunManifest(command=[], config={}, config_hash="hash", toolkit_version="0",
                                         started="now"))
    return directory


def written_directory(path: Path) -> Path:
    """Candidates (one unit twice, as two writers that both finished it), rejects (one unit tried three times, one
    later accepted), and a line that is no record."""
    directory = held(path)
    for k in range(6):
        directory.append(candidate(k))
    directory.append(candidate(2))  # a second writer finished unit 2 too
    directory.append(reject(7, "transient_failure"))
    directory.append(reject(7))
    directory.append(reject(8))
    directory.append(reject(3))  # rejected once, then accepted
    directory.append(reject(7, "parse_error"))
    directory.release()
    with (path / "rejects.jsonl").open("ab") as handle:
        handle.write(b'{"not": "a reject"}\n')
    return path


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """(file name, start byte) of every pass over a record file, by the index or any reader."""
    seen: list[tuple[str, int]] = []
    real = jsonl.scan_lines

    def counted(path: Path, start: int = 0, first: int = 1) -> Any:
        seen.append((path.name, start))
        return real(path, start, first)

    monkeypatch.setattr(unit_index, "scan_lines", counted)
    monkeypatch.setattr(jsonl, "scan_lines", counted)
    return seen


def old_counts(path: Path) -> tuple[dict, dict]:
    """The manifest's counts and totals as they were computed before the index: from every record read."""
    directory = RunDirectory(path)
    counts: dict[str, Any] = {"candidates": 0, "rejects": 0, "codes": Counter(), "by_category": {}}
    totals = {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0, "cost_known": True}
    for outcome, record in [*(("candidates", c) for c in directory.candidates()),
                            *(("rejects", r) for r in directory.rejections())]:
        counts["by_category"].setdefault(record.category, Counter())[outcome] += 1
        counts[outcome] += 1
        if isinstance(record, Rejection):
            counts["codes"].update(record.codes)
        totals["prompt_tokens"] += record.provenance.usage.prompt_tokens
        totals["completion_tokens"] += record.provenance.usage.completion_tokens
        if record.provenance.cost is None:
            totals["cost_known"] = False
        else:
            totals["cost"] += record.provenance.cost
    counts["codes"] = dict(sorted(counts["codes"].items()))
    counts["by_category"] = {k: dict(v) for k, v in sorted(counts["by_category"].items())}
    return counts, totals


def test_counts_from_the_index_equal_those_of_the_records(tmp_path: Path) -> None:
    path = written_directory(tmp_path / "run")
    assert RunDirectory(path).count_outcomes()[0].model_dump() == old_counts(path)[0]  # before compaction
    directory = held(path)
    counts, totals = directory.settle()
    directory.release()
    assert (counts.model_dump(), totals.model_dump()) == old_counts(path)  # after: what the files now hold
    assert counts.candidates == 6 and counts.codes == {"parse_error": 1, "too_many_changes": 1}
    # Compaction kept each unit's last reject and the line that is no record, in file order.
    kept = (path / "rejects.jsonl").read_bytes().splitlines()
    assert [json.loads(line).get("codes") for line in kept] == [["too_many_changes"], ["parse_error"], None]


def test_a_resume_reads_no_record_file_when_the_index_matches(tmp_path: Path, scans: list) -> None:
    path = written_directory(tmp_path / "run")
    first = held(path)
    expected = first.written()  # catches the index up on the hand-written line
    first.settle()
    first.release()
    scans.clear()
    directory = held(path)
    assert directory.written() == expected
    directory.settle()
    assert scans == []
    assert set(expected.accepted) == {f"t{k}::c::0" for k in range(6)}
    assert set(expected.rejected) == {"t7::c::0", "t8::c::0"}  # t3's reject is an accepted unit's
    assert set(expected.finished(retry_rejects=False)) == {f"t{k}::c::0" for k in (0, 1, 2, 3, 4, 5, 7, 8)}


def test_a_deleted_index_is_rebuilt_in_one_pass(tmp_path: Path, scans: list) -> None:
    path = written_directory(tmp_path / "run")
    directory = held(path)
    expected = directory.written()
    for name in ("candidates.jsonl", "rejects.jsonl"):
        index_path(path / name).unlink()
    scans.clear()
    assert directory.written() == expected
    assert sorted(scans) == [("candidates.jsonl", 0), ("rejects.jsonl", 0)]
    assert index_path(path / "candidates.jsonl").exists() and index_path(path / "rejects.jsonl").exists()
    scans.clear()
    assert directory.written() == expected and scans == []


def test_lines_appended_behind_the_index_are_read_alone(tmp_path: Path, scans: list) -> None:
    path = written_directory(tmp_path / "run")
    directory = held(path)
    directory.written()
    size = (path / "candidates.jsonl").stat().st_size
    with (path / "candidates.jsonl").open("ab") as handle:  # by hand, past the index
        handle.write((candidate(9).model_dump_json(exclude_unset=True) + "\n").encode())
    scans.clear()
    assert "t9::c::0" in directory.written().accepted
    assert scans == [("candidates.jsonl", size)]  # only the new line was read


@pytest.mark.parametrize("change", ["truncated", "rewritten", "not an index"])
def test_a_file_changed_behind_the_index_is_rebuilt(tmp_path: Path, scans: list, change: str) -> None:
    path = written_directory(tmp_path / "run")
    directory = held(path)
    directory.written()
    data = (path / "candidates.jsonl").read_bytes()
    if change == "truncated":  # the last line cut off by hand
        (path / "candidates.jsonl").write_bytes(data[:data.rstrip(b"\n").rfind(b"\n") + 1])
    elif change == "rewritten":  # the same size, another unit id on the last line
        (path / "candidates.jsonl").write_bytes(data.replace(b'"id":"t2::c::0"', b'"id":"t8::c::0"'))
    else:
        index_path(path / "candidates.jsonl").write_bytes(b'["injector-unit-index",1]\n[[[[[[[\n')
    scans.clear()
    accepted = directory.written().accepted
    assert ("candidates.jsonl", 0) in scans  # read whole again
    truth = {c.id for c in RunDirectory(path).candidates()}
    assert set(accepted) == truth
    assert ("t8::c::0" in accepted) == (change == "rewritten")


def test_a_crash_between_a_line_and_its_entry_leaves_an_index_found_behind(tmp_path: Path, scans: list,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run"
    directory = held(path)
    directory.append(candidate(1))
    real = UnitIndex.appended
    monkeypatch.setattr(UnitIndex, "appended", lambda *args: None)  # killed after the line, before its entry
    directory.append(candidate(2))
    monkeypatch.setattr(UnitIndex, "appended", real)
    directory.append(candidate(3))  # the index no longer ends where this line starts: no entry either
    directory.release()
    index = index_path(path / "candidates.jsonl")
    with index.open("ab") as handle:
        handle.write(b'[2,99')  # and a torn entry, as a kill mid-write of the index leaves
    scans.clear()
    resumed = held(path)
    assert set(resumed.written().accepted) == {"t1::c::0", "t2::c::0", "t3::c::0"}
    first_line = len(candidate(1).model_dump_json(exclude_unset=True)) + 1
    assert scans == [("candidates.jsonl", first_line)]  # caught up from the last entry on
    assert index.read_bytes().endswith(b"\n") and index.read_bytes().count(b"\n") == 4  # header + 3 entries
    scans.clear()
    resumed.append(candidate(4))
    assert len(resumed.written().accepted) == 4 and scans == []


def test_a_reader_that_does_not_hold_the_run_writes_no_index(tmp_path: Path) -> None:
    path = written_directory(tmp_path / "run")
    for name in ("candidates.jsonl", "rejects.jsonl"):
        index_path(path / name).unlink()
    counts, _ = RunDirectory(path).count_outcomes()
    assert counts.candidates == 6
    assert not index_path(path / "candidates.jsonl").exists()  # a received directory is left as it came
    secret = path.parent / "secret"
    secret.write_text("not an index")
    index_path(path / "candidates.jsonl").symlink_to(secret)  # planted: never followed, the file is read instead
    assert RunDirectory(path).count_outcomes()[0].candidates == 6


def offline_run(out: Path, executor: Any = None) -> RunDirectory:
    taxonomy = Taxonomy.load()
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["step_contradiction", "missing_condition"]),
                   out=out, limit=12, concurrency=2)
    run(load_trajectories(), spec, OfflineEngine(operators=WITHDRAWN_OPERATORS), executor=executor)
    return RunDirectory(out)


@pytest.mark.parametrize("workers", [1, 2])
def test_resuming_a_finished_run_reads_its_record_files_at_most_once(tmp_path: Path, workers: int,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from injector.runner.executors.processes import WorkerProcesses

    executor = WorkerProcesses(workers) if workers > 1 else None
    out = tmp_path / "run"
    offline_run(out, executor)
    manifest = json.loads((out / "manifest.json").read_text())
    log = tmp_path / "reads.log"  # appended to by every process, workers included
    real = jsonl.scan_lines

    def counted(path: Path, start: int = 0, first: int = 1) -> Any:
        with log.open("a") as handle:
            handle.write(f"{path.name} {start}\n")
        return real(path, start, first)

    monkeypatch.setattr(unit_index, "scan_lines", counted)
    monkeypatch.setattr(jsonl, "scan_lines", counted)
    offline_run(out, WorkerProcesses(workers) if workers > 1 else None)
    assert not log.exists()  # the index matched: no record file was read
    resumed = json.loads((out / "manifest.json").read_text())
    assert (resumed["counts"], resumed["totals"]) == (manifest["counts"], manifest["totals"])
    assert resumed["counts"]["candidates"] + resumed["counts"]["rejects"] == 12
    for name in ("candidates.jsonl", "rejects.jsonl"):
        index_path(out / name).unlink(missing_ok=True)
    offline_run(out, WorkerProcesses(workers) if workers > 1 else None)
    reads = Counter(log.read_text().split("\n")[:-1])
    assert reads and all(n == 1 for n in reads.values()), reads  # rebuilt: each file read once, by one process
    assert json.loads((out / "manifest.json").read_text())["counts"] == manifest["counts"]


@pytest.mark.parametrize("workers", [1, 2])
def test_resuming_a_finished_run_reads_each_index_once(tmp_path: Path, workers: int,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from injector.runner.executors.processes import WorkerProcesses

    out = tmp_path / "run"
    offline_run(out, WorkerProcesses(workers) if workers > 1 else None)
    manifest = json.loads((out / "manifest.json").read_text())
    reads: list[str] = []
    real = UnitIndex._stored

    def counted(self: UnitIndex) -> Any:
        reads.append(self.data_path.name)
        return real(self)

    monkeypatch.setattr(UnitIndex, "_stored", counted)
    offline_run(out, WorkerProcesses(workers) if workers > 1 else None)
    # What the run skips and what its end settles come from the same reading (nothing was written in between).
    assert sorted(reads) == ["candidates.jsonl", "rejects.jsonl"]
    resumed = json.loads((out / "manifest.json").read_text())
    assert (resumed["counts"], resumed["totals"]) == (manifest["counts"], manifest["totals"])
