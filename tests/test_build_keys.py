"""What `inject build` writes, pinned to its in-memory algorithm (`collect_rows`, `assign_splits`, PRMBench's files
sorted by (classification, idx)), written here with the same writers: a change to how a build holds its row keys
(issue 30: e.g. on disk) must write the same bytes, on ids shared by two runs, non-ASCII trajectory ids (whose
order differs between code points, UTF-16 and ASCII-only comparison), numbered idx and a source idx equal to
another's numbered one."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
from injector.curate.build import BuildReport, BuildRequest, assign_splits, build, collect_rows
from injector.util.errors import UserError

# Suffixes whose order differs between ASCII-only and code-point comparison, and between UTF-8 and UTF-16.
SUFFIXES = ("z", "é", "Z", "ｚ", "𝔸", "a-b", "a_b", "10", "9")


def _rewrite(run_dir: Path, records: list[dict]) -> None:
    (run_dir / "candidates.jsonl").write_text("".join(json.dumps(record, ensure_ascii=False) + "\n"
                                                      for record in records), encoding="utf-8")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    """Two runs over the same input with different configurations, so their candidates share ids (suffixed by
    each run's config hash in the split): copies under non-ASCII trajectory ids, several candidates per (category,
    source idx) (numbered `_2`, `_3`), a source idx that is another's numbered idx, and copies sharing a problem
    key under different trajectory ids (kept on one side of train/test)."""
    base = tmp_path_factory.mktemp("runs")
    taxonomy = Taxonomy.load()
    first = base / "first"
    run(load_trajectories(), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy", "circular_logic"]),
                                     out=first, limit=6), OfflineEngine())
    originals = [json.loads(line) for line in (first / "candidates.jsonl").read_text().splitlines()]
    assert len(originals) >= 4
    records = []
    for number, suffix in enumerate(SUFFIXES):
        for record in originals:
            copy = dict(record, id=f"{record['id']}-{suffix}", trajectory_id=f"{record['trajectory_id']}-{suffix}",
                        sample=number % 3)
            copy["idx"] = record["idx"] if number < 3 else f"{record['idx']}-{suffix}"
            copy["problem_key"] = f"{record.get('problem_key') or record['idx']}-{number // 2}"
            records.append(copy)
    clash = dict(originals[0], id="clash", trajectory_id="clash", idx=f"{originals[0]['idx']}_2")
    records.append(clash)
    _rewrite(first, records)
    second = base / "second"
    shutil.copytree(first, second)
    manifest = json.loads((second / "manifest.json").read_text())
    manifest["config_hash"] = "f" * 64
    (second / "manifest.json").write_text(json.dumps(manifest))
    _rewrite(second, records[: len(records) // 2])
    return first, second


def _reference(out: Path, request: BuildRequest) -> None:
    """Main's algorithm: every row in memory, split by `assign_splits`, PRMBench's files by (classification, idx)."""
    from injector.curate.exports import write_split

    rows = collect_rows(request.run_dirs, include_unreviewed=True, include_sources=request.include_sources,
                        report=BuildReport(out_dir=out))
    splits = assign_splits(rows, by=request.by, test_size=request.test_size, seed=request.seed)
    out.mkdir()
    write_split(out, {name: (lambda part=part: (row.record() for row in part)) for name, part in splits.items()},
                (row.record() for row in sorted(rows, key=lambda row: (row.classification, row.idx))), lambda: "")


def _files(split: Path) -> dict[str, bytes]:
    """Every file of a split but its card and the saved dataset's `state.json` (a random fingerprint)."""
    return {str(path.relative_to(split)): path.read_bytes() for path in sorted(split.rglob("*"))
            if path.is_file() and path.name not in ("README.md", "state.json")}


@pytest.mark.parametrize("options", [dict(), dict(by="train-test", test_size=0.4, seed=3)], ids=["category", "train-test"])
def test_a_build_writes_what_mains_in_memory_algorithm_writes(runs, tmp_path, options):
    request = BuildRequest(run_dirs=runs, out=tmp_path / "split", include_unreviewed=True, include_sources=True,
                           cues=False, **options)
    report = build(request)
    _reference(tmp_path / "reference", request)
    written, expected = _files(tmp_path / "split"), _files(tmp_path / "reference")
    assert list(written) == list(expected)
    assert [name for name in written if written[name] != expected[name]] == []
    prmbench = [json.loads(line) for path in sorted((tmp_path / "split" / "prmbench").glob("*.jsonl"))
                for line in path.read_text().splitlines()]
    idx = [row["idx"] for row in prmbench]
    assert any(i.endswith("_3") for i in idx) and len(idx) == len(report.rows) == sum(report.splits.values())
    ids = [json.loads(line)["id"] for path in (tmp_path / "split" / "jsonl").glob("*.jsonl")
           for line in path.read_text().splitlines()]
    assert len(ids) == len(set(ids)) and any("~ffffffff" in i for i in ids)


def test_a_build_on_the_same_run_twice_is_refused_as_main_refused_it(runs, tmp_path):
    first, _ = runs
    with pytest.raises(UserError) as in_memory:
        collect_rows([first, first], include_unreviewed=True, report=BuildReport(out_dir=tmp_path))
    with pytest.raises(UserError) as built:
        build(BuildRequest(run_dirs=(first, first), out=tmp_path / "split", include_unreviewed=True, cues=False))
    assert str(built.value) == str(in_memory.value)
    assert not (tmp_path / "split").exists() and not list(tmp_path.glob(".split*"))


@pytest.mark.parametrize("options", [dict(), dict(by="train-test", test_size=0.4, seed=3)], ids=["category", "train-test"])
def test_the_cards_figures_are_those_of_the_rows_in_the_order_they_were_read(runs, tmp_path, options):
    """A build counts its card's figures as it writes each split (an order of its own) and probes its cue sample
    read back from its spill: the figures and the probe are the ones of every row in the order the runs were read
    (`CardFigures.of` on `collect_rows`), the sample's rows and order included."""
    from injector.curate.card import _cue_figures
    from injector.curate.card_figures import CardFigures

    report = build(BuildRequest(run_dirs=runs, out=tmp_path / "split", include_unreviewed=True, include_sources=True,
                                cue_sample=12, **options))
    rows = collect_rows(runs, include_unreviewed=True, include_sources=True, report=BuildReport(out_dir=tmp_path))
    expected = CardFigures.of((row.record() for row in rows), 12)
    assert len(expected.cue_rows()) < len(rows)  # a sample: some categories have more rows than it takes
    built = report.figures
    built.settle()
    for name in ("reviewed", "domain_of", "domains", "accepted_by_reviewers", "models", "histogram"):
        assert getattr(built, name) == getattr(expected, name), name
    assert {c: vars(f) for c, f in built.categories.items()} == {
        c: {**vars(f), "_placed": built.categories[c]._placed} for c, f in expected.categories.items()}
    assert built.cues == _cue_figures(expected)
    assert built.cues[0]["overall"]["auc"] is not None
