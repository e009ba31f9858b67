"""`inject build` streams (issue 30 item 1): it never holds the split's rows, whatever the run's size. Counted, not
timed: the split rows and candidates alive while the build writes its files and its card."""
from __future__ import annotations

import gc
import json
import shutil
import tracemalloc
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


def test_a_build_writes_its_tables_batch_by_batch_and_never_reads_a_row_back(large_run, tmp_path, monkeypatch):
    """The saved dataset and the Parquet files are fed `WRITER_BATCH` rows a write as the rows come; no Arrow file
    is opened or memory-mapped to read rows back (before: `save_to_disk` and `to_parquet` memory-mapped every row
    of the split, ~5 KB of resident memory a row, and rewrote it in batches of 1,000)."""
    import pyarrow
    import pyarrow.ipc
    import pyarrow.parquet

    from injector.curate import exports

    monkeypatch.setattr(exports, "WRITER_BATCH", 25)
    read_back: list[str] = []
    for module, name in ((pyarrow, "memory_map"), (pyarrow.ipc, "open_stream"), (pyarrow.ipc, "open_file"),
                         (pyarrow, "OSFile")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *args, _real=real, _name=name, **kwargs:
                            read_back.append(_name) or _real(*args, **kwargs))
    tables: list[int] = []
    for writer in (pyarrow.RecordBatchStreamWriter, pyarrow.parquet.ParquetWriter):
        real_write = writer.write_table
        monkeypatch.setattr(writer, "write_table", lambda self, table, *args, _real=real_write, **kwargs:
                            tables.append(table.num_rows) or _real(self, table, *args, **kwargs))
    build_module_request = dict(run_dirs=(large_run,), out=tmp_path / "split", include_unreviewed=True, cues=False)
    from injector.curate.build import BuildRequest, build

    build(BuildRequest(**build_module_request))
    rows = sum(1 for _ in (large_run / "candidates.jsonl").open())
    assert read_back == []
    assert tables and max(tables) <= 25
    assert sum(tables) == 2 * rows  # every row once into the saved dataset, once into Parquet
    monkeypatch.undo()
    import datasets

    saved = datasets.load_from_disk(str(tmp_path / "split"))
    lines = (tmp_path / "split" / "jsonl" / "redundancy.jsonl").read_text().splitlines()
    assert saved["redundancy"].to_list() == [json.loads(line) for line in lines]
    assert datasets.Dataset.from_parquet(str(tmp_path / "split" / "parquet" / "redundancy.parquet")).to_list() \
        == saved["redundancy"].to_list()


def test_a_saved_split_is_laid_out_as_datasets_saves_one_in_shards(large_run, tmp_path, monkeypatch):
    """Shards, state.json, dataset_info.json and dataset_dict.json as `DatasetDict.save_to_disk` writes them, so
    `load_from_disk` reads the rows back in order across shards."""
    import datasets

    from injector.curate import exports, saved_dataset
    from injector.curate.build import BuildRequest, build
    from injector.curate.exports import split_features

    monkeypatch.setattr(exports, "WRITER_BATCH", 20)
    monkeypatch.setattr(saved_dataset, "MAX_SHARD_BYTES", 20_000)
    build(BuildRequest(run_dirs=(large_run,), out=tmp_path / "split", include_unreviewed=True, cues=False,
                       by="train-test", test_size=0.3))
    split = tmp_path / "split"
    rows = {name: [json.loads(line) for line in (split / "jsonl" / f"{name}.jsonl").read_text().splitlines()]
            for name in ("test", "train")}  # in the order the build writes them
    reference = tmp_path / "reference"
    datasets.DatasetDict({name: datasets.Dataset.from_list(part, features=split_features())
                          for name, part in rows.items()}).save_to_disk(str(reference))
    assert (split / "dataset_dict.json").read_text() == (reference / "dataset_dict.json").read_text()
    for name in rows:
        shards = sorted(path.name for path in (split / name).glob("*.arrow"))
        assert len(shards) > 1 and shards[-1] == f"data-{len(shards) - 1:05d}-of-{len(shards):05d}.arrow"
        assert (split / name / "dataset_info.json").read_text() == (reference / name / "dataset_info.json").read_text()
        state, expected = (json.loads((where / name / "state.json").read_text()) for where in (split, reference))
        assert state["_data_files"] == [{"filename": shard} for shard in shards]
        assert {key: value for key, value in state.items() if key not in ("_data_files", "_fingerprint")} \
            == {key: value for key, value in expected.items() if key not in ("_data_files", "_fingerprint")}
        assert sorted(path.name for path in (split / name).iterdir()) == sorted([*shards, "state.json",
                                                                                "dataset_info.json"])
    loaded = datasets.load_from_disk(str(split))
    assert {name: part.to_list() for name, part in loaded.items()} == rows


def test_a_builds_keys_share_their_repeated_strings(large_run, tmp_path):
    """A key per row is what a build holds: its category and classification are one string object per value, and a
    trajectory id equal to the source idx is the same object (before: each row's own copies, ~200 B a row)."""
    from injector.curate.build_report import BuildReport
    from injector.curate.row_spill import RowSpill
    from injector.curate.rows import collect_keys

    spill = RowSpill(tmp_path / "rows.jsonl")
    keys = collect_keys([large_run], spill, include_unreviewed=True, report=BuildReport(out_dir=tmp_path))
    spill.close()
    assert len(keys) >= 200
    assert len({id(key.category) for key in keys}) == len({key.category for key in keys})
    assert len({id(key.classification) for key in keys}) == len({key.classification for key in keys})
    same = [key for key in keys if key.trajectory_id == key.source_idx]
    assert same and all(key.trajectory_id is key.source_idx for key in same)


def test_the_cards_cue_probe_runs_before_the_tables_and_gives_the_samples_figures(large_run, tmp_path, monkeypatch):
    """The probe runs once the rows are read, before any table is written (its memory and the writers' do not add
    up), on the sample `card.cue_sample` picks from the rows in the order they were read, and the card shows it."""
    from injector.curate import exports
    from injector.curate.build import BuildReport, BuildRequest, build, collect_rows
    from injector.curate.card import cue_sample
    from injector.triage import cues

    events: list[str] = []
    real_report, real_stream = cues.cue_report, exports._stream_split

    def probing(*args, **kwargs):
        events.append("probe")
        return real_report(*args, **kwargs)

    def writing(*args, **kwargs):
        events.append("table")
        return real_stream(*args, **kwargs)

    monkeypatch.setattr(cues, "cue_report", probing)
    monkeypatch.setattr(exports, "_stream_split", writing)
    report = build(BuildRequest(run_dirs=(large_run,), out=tmp_path / "split", include_unreviewed=True,
                                cue_sample=50))
    assert events == ["probe", "table"]  # before: the tables, then the probe when the card was written
    rows = [row.record() for row in collect_rows([large_run], include_unreviewed=True,
                                                 report=BuildReport(out_dir=tmp_path))]
    assert len(rows) > 50
    expected = real_report(cues.cue_records((row, "in_split") for row in cue_sample(rows, 50)), overall_sample=50,
                           top=0)
    probed, _ = report.figures.cues
    assert probed == expected and probed["per_category"]["redundancy"]["auc"] is not None
    card = (tmp_path / "split" / "README.md").read_text()
    assert f"| {probed['per_category']['redundancy']['auc']:.2f} |" in card


def test_a_builds_keys_hold_few_bytes_a_row(large_run, tmp_path):
    """What `collect_keys` leaves held per row (tracemalloc, after a first pass has warmed every cache): a key with
    its id, the strings a source's rows share held once, the fields few rows tell apart in one shared object, the
    spill offsets in an array (before: 395 B a row here, 247 after)."""
    from injector.curate.build_report import BuildReport
    from injector.curate.row_spill import RowSpill
    from injector.curate.rows import collect_keys

    def keys_of(name: str) -> tuple[list, RowSpill]:  # the spill too: what it holds per row counts
        spill = RowSpill(tmp_path / name)
        keys = collect_keys([large_run], spill, include_unreviewed=True, include_sources=True,
                            report=BuildReport(out_dir=tmp_path))
        spill.close()
        return keys, spill

    keys_of("warm.spill")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        keys, spill = keys_of("rows.spill")
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert len(keys) >= 400 and spill.path.stat().st_size
    assert held / len(keys) < 300, f"{held / len(keys):.0f} bytes a row"


def test_the_cards_error_positions_hold_a_float_a_row():
    """A build counts each row's first-error position with its place and puts them in the rows' order once written
    (`CardFigures.settle`): what that holds and makes per row is a float's 8 bytes (before: a float object in a list
    and, while ordering, two int objects a row: 79 B a row here, 25 after)."""
    from injector.curate.card_figures import CardFigures

    rows = [{"category": "c", "error_steps": [1 + n % 3], "modified_process": ["a", "b", "c", "d"]}
            for n in range(20_000)]
    figures, in_order = CardFigures(cue_sample=None), CardFigures(cue_sample=None)
    for place, row in reversed(list(enumerate(rows))):  # counted out of order, as a build's splits are
        figures.add(row, seq=place, answers=(None, None))
    for row in rows:
        in_order.add(row, answers=(None, None))
    expected = in_order.categories["c"].positions
    import numpy  # noqa: F401  (loaded in a build long before; its import is not what a row costs)

    gc.collect()
    tracemalloc.start()
    try:
        figures.settle()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert list(figures.categories["c"].positions) == list(expected) and len(expected) == len(rows)
    assert peak / len(rows) < 40, f"{peak / len(rows):.0f} bytes a row"
