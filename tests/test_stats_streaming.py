"""`inject stats` streams: it keeps each record's few numbers, never every record's dump at once, and its figures
are those of reading everything first."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
from injector.engines.offline import WITHDRAWN_OPERATORS
from injector.curate import stats


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    taxonomy = Taxonomy.load()
    out = tmp_path_factory.mktemp("stats") / "run"
    run(load_trajectories(), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(
        ["step_contradiction", "missing_condition", "confidence"]), out=out, limit=30), OfflineEngine(operators=WITHDRAWN_OPERATORS))
    return out


class Live:
    """Counts the record dumps alive at once (each dump holds one)."""

    now = 0
    most = 0

    def __init__(self) -> None:
        Live.now += 1
        Live.most = max(Live.most, Live.now)

    def __del__(self) -> None:
        Live.now -= 1


@pytest.mark.parametrize("cues", [False, True])
def test_stats_holds_one_record_dump_at_a_time(run_dir: Path, monkeypatch: pytest.MonkeyPatch, cues: bool) -> None:
    expected = stats.compute_stats(run_dir, cues=cues)
    real = stats._declared

    def declared(record: Any) -> dict[str, Any]:
        return {**real(record), "_probe": Live()}

    monkeypatch.setattr(stats, "_declared", declared)
    Live.now = Live.most = 0
    assert stats.compute_stats(run_dir, cues=cues) == expected
    lines = sum(len((run_dir / name).read_bytes().splitlines()) for name in ("candidates.jsonl", "rejects.jsonl"))
    assert expected["total"]["records"] == lines > 30
    assert Live.most <= 2  # the dump being read, and at most the one before it


def test_stats_keeps_totals_per_category_not_a_row_per_record(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each record's numbers are added to its category's totals and dropped: they were kept as a row per record
    (a columnar frame, ~0.3 KB a record: 32 MB and a fifth of stats' CPU at 100k records)."""
    expected = stats.compute_stats(run_dir)
    real = stats._flat

    class Row(dict):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            self.probe = Live()

    monkeypatch.setattr(stats, "_flat", lambda *args: Row(real(*args)))
    Live.now = Live.most = 0
    assert stats.compute_stats(run_dir) == expected
    assert expected["total"]["records"] > 30
    assert Live.most <= 2


def test_stats_figures_equal_those_of_every_record_read_first(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    streamed = stats.compute_stats(run_dir)
    loaded = stats.load_records(run_dir)
    monkeypatch.setattr(stats, "iter_records", lambda path, taxonomy=None: iter(loaded))
    assert stats.compute_stats(run_dir) == streamed
    assert sum(1 for _, status in loaded if status == "rejected_by_validation") \
        == streamed["total"]["rejected_by_validation"]


def test_stats_routes_the_candidates_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The triage routing table counts each candidate's route as it is read: it was a list of every candidate's
    route (~1.3 KB a candidate, 132 MB at 100k) held until the table was made."""
    from injector.triage.step_audit import routing
    from injector.triage.step_audit.hooks import audit_on_write

    taxonomy, run_dir = Taxonomy.load(), tmp_path / "run"
    run(load_trajectories(), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy", "circular_logic"]),
                                     out=run_dir, limit=12, candidate_audit=audit_on_write), OfflineEngine())
    expected = stats.compute_stats(run_dir)
    assert expected["total"]["audit_checked"] > 5
    real = routing.route

    def route(*args: Any) -> Any:
        routed = real(*args)
        object.__setattr__(routed, "__pydantic_private__", {"probe": Live()})
        return routed

    monkeypatch.setattr(routing, "route", route)
    Live.now = Live.most = 0
    assert stats.compute_stats(run_dir) == expected and "routing" in expected
    assert Live.most <= 2  # the route being counted, and at most the one before it
