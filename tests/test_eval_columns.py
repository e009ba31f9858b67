"""`inject eval --scores` holds a split's solutions and their scores as columns, a few bytes each (bench/RESULTS.md:
~1 KB a solution as items, ids and score arrays, 396 MB at 300k solutions). Objects and bytes counted, never time."""
from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import pytest

from injector.evaluate import EvalRequest, evaluate
from injector.evaluate.columns import ItemColumns, SeenIds, digest
from injector.evaluate.metrics import EvalItem
from injector.evaluate.splits import load_split
from injector.util.errors import UserError

STEPS = [f"Step {k}: x = {k}." for k in range(16)]  # 16 steps, as the PRMBench exports of bench/scale.py


def _split(tmp_path: Path, n: int) -> tuple[Path, Path]:
    """A PRMBench file of `n` circular solutions (error at step 3) and a scores file for them."""
    split = tmp_path / "split"
    split.mkdir()
    (split / "circular.jsonl").write_text("".join(json.dumps(
        {"idx": f"p{k}", "classification": "circular", "original_question": "q", "modified_question": "q",
         "original_process": STEPS, "modified_process": STEPS, "error_steps": [3]}) + "\n" for k in range(n)))
    scores = tmp_path / "scores.jsonl"
    scores.write_text("".join(json.dumps({"id": f"p{k}::circular", "step_scores": [
        ((k * 7 + step * 13) % 100) / 100 for step in range(16)]}) + "\n" for k in range(n)))
    return split, scores


def test_no_item_per_solution_is_alive_while_the_figures_are_computed(tmp_path, monkeypatch):
    """While the bootstrap resamples (the run's longest step), every solution's `EvalItem` was alive: 3,000 here.
    Now items are made from the columns as they are read: a handful alive."""
    import injector.evaluate.report as report

    split, scores = _split(tmp_path, 3_000)
    alive: list[int] = []
    real = report.add_intervals

    def counting(*args, **kwargs):
        gc.collect()
        alive.append(sum(isinstance(thing, EvalItem) for thing in gc.get_objects()))
        return real(*args, **kwargs)

    monkeypatch.setattr(report, "add_intervals", counting)
    gc.collect()
    before = sum(isinstance(thing, EvalItem) for thing in gc.get_objects())  # other tests' items
    result = evaluate(EvalRequest(split=str(split), scores=str(scores), out=str(tmp_path / "report"), plots=False))
    assert result.metrics["n_items"] == 3_000
    assert alive and max(alive) - before <= 5, (alive, before)


def _peak(tmp_path: Path, n: int) -> int:
    """tracemalloc's peak over an `evaluate` of `n` solutions (plots and bootstrap on), over what was held before."""
    tmp_path.mkdir()
    split, scores = _split(tmp_path, n)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        evaluate(EvalRequest(split=str(split), scores=str(scores), out=str(tmp_path / "report")))
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_an_eval_holds_under_250_bytes_a_solution_at_its_peak(tmp_path):
    """What the peak grows by per solution, from 1,000 to 5,000 16-step solutions (the plots' and imports' fixed
    cost cancels out): ~2 KB a solution before (items, ids and their first locations, score arrays, the vectors as
    lists, the curve's pooled and sorted scores); now ids as digests and bytes, scores left in the file, vectors
    as 32-bit ints."""
    _peak(tmp_path / "warm", 50)  # imports and caches before measuring
    growth = (_peak(tmp_path / "large", 5_000) - _peak(tmp_path / "small", 1_000)) / 4_000
    assert growth < 250, growth


def test_seen_ids_find_every_id_once_merged_into_the_sorted_digests(monkeypatch):
    """Past `RECENT` ids the digests move into a sorted numpy array of 16-byte strings, which drops a trailing zero
    byte when read: a digest ending in one (1 id in 256) was not found, so the id's repeat went unseen and its
    scores were "missing" (a 100k-solution run refused). Digests end in an odd byte."""
    import injector.evaluate.columns as columns

    monkeypatch.setattr(columns, "RECENT", 1_000)
    seen = SeenIds()
    assert all(seen.add(f"id{k}") is None for k in range(5_000))
    assert [seen.find(f"id{k}") for k in range(5_000)] == list(range(5_000))
    assert [seen.add(f"id{k}") for k in range(0, 5_000, 7)] == list(range(0, 5_000, 7))
    assert seen.find("another") is None
    assert all(digest(f"id{k}")[-1] & 1 for k in range(1_000))


def test_columns_give_back_the_items_a_list_holds(tmp_path):
    """The scores file's path reads the split as `ItemColumns`: item for item the split's items, texts blank."""
    split, _ = _split(tmp_path, 30)
    listed = load_split(split)
    columns = load_split(split, texts=False).items
    assert isinstance(columns, ItemColumns) and len(columns) == 30
    assert [(item.id, item.category, item.kind, len(item.steps), item.error_steps, item.first_error,
             item.given_error_steps) for item in columns] == [
        (item.id, item.category, item.kind, len(item.steps), item.error_steps, item.first_error,
         item.given_error_steps) for item in listed.items]
    assert columns[-1].steps == ("",) * 16 and columns[2:4] == [columns[2], columns[3]]
    assert columns.index_of("p17::circular") == 17 and columns.index_of("p99::circular") is None
    built = ItemColumns()  # items appended without a reader: numbered by `append`
    for item in listed.items[:5]:
        built.append(item)
    assert [built.index_of(f"p{k}::circular") for k in range(5)] == list(range(5))
    assert built.kind_counts() == {"error": 5, "multi_solution": 0, "correct": 0}


def test_a_scores_file_changed_while_read_is_refused_in_one_line(tmp_path):
    """The scores stay in the file and are read again for each figure: a file rewritten meanwhile is refused (a
    one-line error, exit 2), never read as other solutions' scores."""
    from injector.evaluate.protocols import PRMBENCH
    from injector.evaluate.scorers import read_scores

    split, scores = _split(tmp_path, 5)
    items = load_split(split, texts=False).items
    result = read_scores(scores, items, PRMBENCH)
    assert list(result.scores["p3::circular"]) == [((3 * 7 + step * 13) % 100) / 100 for step in range(16)]
    lines = scores.read_text().splitlines(keepends=True)
    scores.write_text("".join(reversed(lines)))
    with pytest.raises(UserError, match="changed while `inject eval` read it"):
        result.scores["p4::circular"]
    result.scores.close()  # type: ignore[attr-defined]


def test_score_columns_dropped_unclosed_close_their_file(tmp_path):
    """The scores file stays open for the reads again; a `read_scores` caller that never closes it loses no
    descriptor once the result is dropped."""
    import os

    from injector.evaluate.protocols import PRMBENCH
    from injector.evaluate.scorers import read_scores

    split, scores = _split(tmp_path, 5)
    items = load_split(split, texts=False).items
    opened = len(os.listdir("/proc/self/fd"))
    result = read_scores(scores, items, PRMBENCH)
    assert len(result.scores["p1::circular"]) == 16
    assert len(os.listdir("/proc/self/fd")) == opened + 1
    del result
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == opened


def test_an_id_with_a_lone_surrogate_is_scored_like_any_other(tmp_path):
    """JSON may spell a lone surrogate (`"\\ud800"`): Python reads it into the id, and the id's digest must take it
    (it raised UnicodeEncodeError, an internal error, once ids were held as digests)."""
    split, scores = _split(tmp_path, 40)
    for path in (split / "circular.jsonl", scores):  # p1 and p10-p19
        path.write_text(path.read_text().replace('"p1', '"p\\ud800'))
    for sweep in (False, True):  # the sweep's dev part is drawn by a digest of the id too
        result = evaluate(EvalRequest(split=str(split), scores=str(scores), out=str(tmp_path / f"report-{sweep}"),
                                      sweep=sweep))
        assert result.metrics["n_items"] == 40
        predicted = (tmp_path / f"report-{sweep}" / "predictions.jsonl").read_text()
        assert '"id": "p\\ud800::circular"' in predicted
