"""`bench/offline_quality.py`: a category with no candidates gives a row of zeros (no crash), and a row's figures
come from the candidates (check share, coverage, variety)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from injector import Trajectory, load_trajectories

SCRIPT = Path(__file__).parent.parent / "bench" / "offline_quality.py"


def quality():
    spec = importlib.util.spec_from_file_location("offline_quality", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_category_with_no_candidates_prints_zeros():
    bench = quality()
    plain = [Trajectory(id="p", question="Is a square a rectangle?", steps=["Yes, by definition."])]
    row = bench.measure("counterfactual", plain, samples=2, seed=0)
    assert row["candidates"] == 0 and row["not_applicable"] == 2 and row["coverage"] == 0.0
    assert row["check"] == 0.0 and row["answer_changed"] == 0.0 and row["top_4gram_share"] is None
    assert row["cue_auc"] is None and row["cue_records"] == 0
    table = bench.table([row], len(plain))
    assert "| counterfactual | 0 | 2 | 0 % | 0 % | - (0 / 0) | - | 0 % |" in table


def test_rows_measure_the_candidates():
    bench = quality()
    trajectories = list(load_trajectories())
    row = bench.measure("step_contradiction", trajectories, samples=2, seed=0)
    assert row["candidates"] > 0 and row["candidates"] + row["not_applicable"] == 2 * len(trajectories)
    assert row["check"] == 1.0 and 0 < row["coverage"] <= 1
    redundancy = bench.measure("redundancy", trajectories[:6], samples=1, seed=0)
    assert redundancy["candidates"] > 0 and 0 < redundancy["top_4gram_share"] <= 1
