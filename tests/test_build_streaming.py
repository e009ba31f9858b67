"""`inject build` streams (issue 30 item 1): it never holds the split's rows, whatever the run's size. Counted, not
timed: the split rows and candidates alive while the build writes its files and its card."""
from __future__ import annotations

import gc
import json
import shutil
from pathlib import Path

import pytest

from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run

COPIES = 40


@pytest.fixture(scope="module")
def large_run(tmp_path_factory) -> Path:
    """An offline run whose candidates are copied `COPIES` times under new trajectory ids: a few hundred rows."""
    out = tmp_path_factory.mktemp("runs") / "run"
    taxonomy = Taxonomy.load()
    run(load_trajectories(), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy"]), out=out,
                                     limit=12), OfflineEngine())
    lines = (out / "candidates.jsonl").read_text().splitlines()
    with (out / "candidates.jsonl").open("w") as handle:
        for copy in range(COPIES):
            for line in lines:
                record = json.loads(line)
                record["trajectory_id"] = f"{record['trajectory_id']}-c{copy}"
                record["id"] = f"{record['id']}-c{copy}"
                record["idx"] = f"{record['idx']}-c{copy}"
                handle.write(json.dumps(record) + "\n")
    return out


def _alive() -> int:
    from injector.model.split_row import SplitRow
    from injector.records.models import Candidate

    gc.collect()
    return sum(isinstance(thing, (SplitRow, Candidate)) for thing in gc.get_objects())


def test_a_build_holds_no_more_than_a_few_rows_while_it_writes(large_run, tmp_path, monkeypatch):
    from injector.curate import build as build_module, card, exports

    rows = sum(1 for _ in (large_run / "candidates.jsonl").open())
    assert rows >= 200
    seen: list[int] = []
    real_card, real_open = card.dataset_card, getattr(exports, "_open_export", None)

    def counting_card(*args, **kwargs):
        seen.append(_alive())
        return real_card(*args, **kwargs)

    def counting_open(path):
        seen.append(_alive())
        return real_open(path)

    monkeypatch.setattr(card, "dataset_card", counting_card)
    if real_open is not None:
        monkeypatch.setattr(exports, "_open_export", counting_open)
    report = build_module.build(build_module.BuildRequest(run_dirs=(large_run,), out=tmp_path / "split",
                                                          include_unreviewed=True, include_sources=True,
                                                          cue_sample=50))
    assert len(report.rows) == rows + rows  # every candidate and its source, a row each
    written = sum(1 for _ in (tmp_path / "split" / "jsonl" / "redundancy.jsonl").open())
    assert written == rows and (tmp_path / "split" / "README.md").is_file()
    assert seen and max(seen) < 10, seen  # before: every row of the split (hundreds) alive at the card
    assert not list(tmp_path.glob(".split.*"))  # the staging directory, its spill of rows included, is gone


def test_a_streamed_build_writes_the_rows_an_in_memory_one_would(large_run, tmp_path):
    """The split's files hold, in order, the rows `collect_rows` and `assign_splits` give in memory."""
    from injector.curate.build import BuildRequest, BuildReport, assign_splits, build, collect_rows

    build(BuildRequest(run_dirs=(large_run,), out=tmp_path / "split", include_unreviewed=True, by="train-test",
                       test_size=0.3, cues=False))
    rows = collect_rows([large_run], include_unreviewed=True, report=BuildReport(out_dir=tmp_path))
    expected = assign_splits(rows, by="train-test", test_size=0.3, seed=0)
    assert set(expected) == {"train", "test"}
    for name, split_rows in expected.items():
        lines = (tmp_path / "split" / "jsonl" / f"{name}.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in lines] == [row.record() for row in split_rows]
    shutil.rmtree(tmp_path / "split")
