"""What a resume holds of the units already written (records/unit_ids.py): a compact set, not a Python set of
strings, whose hash only places an id: units whose hashes collide are still told apart, so no unit is skipped for
another and a compaction drops only what it should."""
from __future__ import annotations

import json
import pickle
import tracemalloc
from pathlib import Path

import pytest

from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
from injector.engines.offline import WITHDRAWN_OPERATORS
from injector.records import unit_ids
from injector.records.directory import RunDirectory
from injector.records.unit_ids import UnitIds
from test_unit_index import candidate, held, old_counts, reject, written_directory


@pytest.fixture
def colliding(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2-bit hash: almost every pair of ids collides."""
    monkeypatch.setattr(unit_ids, "id_hash", lambda unit: len(unit) & 3)


def test_ids_values_and_repeats() -> None:
    ids = UnitIds([("a", 1), ("b", 2), ("a", 3), ("é\udc80", 4)])  # a lone surrogate, as JSON can carry
    assert list(ids.items()) == [("a", 3), ("b", 2), ("é\udc80", 4)] and len(ids) == 3
    assert "a" in ids and "c" not in ids and 7 not in ids and ids.value("c", -1) == -1
    first = UnitIds([("a", 1), ("b", 2), ("a", 3)], keep="first")
    assert list(first.items()) == [("a", 1), ("b", 2)]
    assert first.add("a", 9, replace=False) == 1 and first.value("a") == 1
    assert first.add("a", 9) == 1 and first.value("a") == 9 and first.add("c") is None
    assert pickle.loads(pickle.dumps(ids)) == ids and ids == {"a", "b", "é\udc80"}


@pytest.mark.usefixtures("colliding")
def test_colliding_hashes_never_take_one_id_for_another() -> None:
    units = [f"t{k}::c::0" for k in range(600)]
    ids = UnitIds.of(units[::2] + units[::4])  # repeats too
    assert len(ids) == 300 and ids == set(units[::2])
    assert [unit for unit in units if unit in ids] == units[::2]
    grown = UnitIds()
    for unit in units[1::2]:
        assert grown.add(unit) is None
    assert [unit for unit in units if unit in grown] == units[1::2]


def test_digests_tell_apart_keys_that_share_their_slot_and_keep_the_first_value() -> None:
    """Keys equal in their first 8 bytes (the slot they hash to) but not after are two keys; a key added again keeps
    its first value, through the table's growth."""
    digests = unit_ids.Digests()
    keys = [bytes(8) + n.to_bytes(8, "little") for n in range(100)]  # every one lands in slot 0 first
    assert [digests.add(key, n) for n, key in enumerate(keys)] == [None] * 100
    assert [digests.add(key, -1) for key in keys] == list(range(100))
    assert len(digests) == 100
    with pytest.raises(ValueError, match="16-byte"):
        digests.add(b"short")


def test_a_resume_holds_the_written_ids_compactly(tmp_path: Path) -> None:
    directory = held(tmp_path / "run")
    units = 4000
    for name, record in (("candidates.jsonl", candidate), ("rejects.jsonl", reject)):
        with (tmp_path / "run" / name).open("ab") as handle:  # by hand: quicker; the index is built once
            for k in range(units // 2):
                handle.write((record(k if name == "candidates.jsonl" else units + k)
                              .model_dump_json(exclude_unset=True) + "\n").encode())
    directory.written()  # builds the index and warms the caches
    tracemalloc.start()
    try:
        written = directory.written()
        held_bytes, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    id_bytes = sum(len(f"t{k}::c::0") for k in range(units))
    # A Python set (or dict) of the id strings held ~95 bytes a unit besides the ids' own; this holds ~35.
    assert held_bytes - id_bytes < 64 * units, (held_bytes - id_bytes) / units
    assert len(written.accepted) == len(written.rejected) == units // 2
    assert not isinstance(written.accepted, (set, frozenset, dict))


@pytest.mark.usefixtures("colliding")
def test_colliding_hashes_count_and_compact_as_before(tmp_path: Path) -> None:
    path = written_directory(tmp_path / "run")
    directory = held(path)
    written = directory.written()
    assert set(written.accepted) == {f"t{k}::c::0" for k in range(6)}
    assert set(written.finished(retry_rejects=False)) == {f"t{k}::c::0" for k in (0, 1, 2, 3, 4, 5, 7, 8)}
    assert "t9::c::0" not in written.finished(retry_rejects=False) and "t7::c::0" in written.rejected
    counts, totals = directory.settle()
    directory.release()
    assert (counts.model_dump(), totals.model_dump()) == old_counts(path)
    kept = (path / "rejects.jsonl").read_bytes().splitlines()
    assert [json.loads(line).get("codes") for line in kept] == [["too_many_changes"], ["parse_error"], None]


@pytest.mark.usefixtures("colliding")
def test_a_transient_failure_is_retried_and_a_final_reject_is_not(tmp_path: Path) -> None:
    directory = held(tmp_path / "run")
    directory.append(reject(1))
    directory.append(reject(2, "transient_failure"))
    directory.append(reject(3, "transient_failure"))
    directory.append(reject(3))  # tried again, rejected for good
    directory.append(candidate(4))
    finished = directory.written().finished(retry_rejects=False)
    assert [unit for unit in (f"t{k}::c::0" for k in range(6)) if unit in finished] == ["t1::c::0", "t3::c::0",
                                                                                      "t4::c::0"]
    assert len(finished) == 3
    assert set(directory.written().finished(retry_rejects=True)) == {"t4::c::0"}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.usefixtures("colliding")
def test_a_resume_with_colliding_hashes_does_every_unit_once(tmp_path: Path, workers: int) -> None:
    from injector.runner.executors.processes import WorkerProcesses

    taxonomy = Taxonomy.load()
    out = tmp_path / "run"

    def offline_run(limit: int) -> None:
        spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["step_contradiction", "missing_condition"]),
                       out=out, limit=limit, concurrency=2)
        run(load_trajectories(), spec, OfflineEngine(operators=WITHDRAWN_OPERATORS), executor=WorkerProcesses(workers) if workers > 1 else None)

    offline_run(5)
    offline_run(14)  # the 9 units not written yet collide with written ones: every one of them is done
    directory = RunDirectory(out)
    ids = [c.id for c in directory.candidates()] + [r.id for r in directory.rejections()]
    assert len(ids) == len(set(ids)) == 14


def test_a_runs_candidate_reader_remembers_each_id_in_a_few_dozen_bytes(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`indexed_candidates` (what stats, build and eval read a run with) yields an id written twice once, so it
    remembers every id seen: as a set of the id strings that was ~120 bytes a candidate, what grew most in `stats`
    at 300k candidates. Measured with tracemalloc while the reader is suspended (what it holds for the rest)."""
    import itertools
    from types import SimpleNamespace

    from injector.records import directory

    count = 20_000
    ids = (f"problem-{n // 2 if n < 20 else n:06d}-solution-abcdefgh::redundancy::0" for n in range(count))
    monkeypatch.setattr(directory, "scan_records",
                        lambda *args, **kwargs: ((n, 100 * n, SimpleNamespace(id=id)) for n, id in enumerate(ids)))
    reader = RunDirectory(tmp_path).indexed_candidates()
    assert [next(reader)[2].id[:14] for _ in range(3)] == ["problem-000000", "problem-000001", "problem-000002"]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        yielded = sum(1 for _ in itertools.islice(reader, count - 100))  # the reader stays suspended
        per_id = (tracemalloc.get_traced_memory()[0] - before) / yielded
    finally:
        tracemalloc.stop()
    assert yielded == count - 100
    assert per_id < 70, per_id
