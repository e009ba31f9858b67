"""Issue 29: `--max-cost` is the run directory's budget over all its invocations (the manifest keeps the total), a
cap no invocation passes; the dry run says when a cap would be refused for lack of a price."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.cli.commands import main
from test_run_loop import GOOD, QUESTION, STEPS, read_jsonl

# 100 prompt + 50 completion tokens (the scripted server's usage) at $20,000 per million each: $3 a unit.
PRICES = ("--price-in", "20000", "--price-out", "20000")


@pytest.fixture
def ten_trajectories(tmp_path: Path) -> Path:
    path = tmp_path / "input.jsonl"
    rows = [{"id": f"t{k}", "question": QUESTION, "steps": [*STEPS[:2], STEPS[2] + "." * k], "answer": "5"}
            for k in range(10)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def run(server, input_path: Path, out: Path, *extra: str):
    return CliRunner().invoke(main, ["run", "--category", "counterfactual", "--input", str(input_path), "--model",
                                     "openai/scripted", "--api-base", server.api_base, "--out", str(out), *PRICES,
                                     *extra], catch_exceptions=False)


def test_four_invocations_at_max_cost_20_spend_at_most_20_in_all(scripted_server, ten_trajectories, tmp_path):
    scripted_server.script = lambda request: json.dumps(GOOD)
    out = tmp_path / "run"
    results = [run(scripted_server, ten_trajectories, out, "--max-cost", "20") for _ in range(4)]
    assert [result.exit_code for result in results] == [3, 3, 3, 3], results[0].output
    spent = sum(record["provenance"]["cost"] for record in read_jsonl(out / "candidates.jsonl"))
    assert spent == pytest.approx(18.0) and len(scripted_server.requests) == 6  # a seventh unit would pass $20
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spending"] == {"total": pytest.approx(18.0), "largest_unit": pytest.approx(3.0)}
    assert "has spent $18.0000 of --max-cost $20" in results[-1].output
    assert "raise the cap to continue, e.g. the same command with --max-cost 40" in results[-1].output
    # A higher cap continues where the run stopped.
    assert run(scripted_server, ten_trajectories, out, "--max-cost", "40").exit_code == 0
    assert len(read_jsonl(out / "candidates.jsonl")) == 10 and len(scripted_server.requests) == 10
    assert json.loads((out / "manifest.json").read_text())["spending"]["total"] == pytest.approx(30.0)


def test_the_dry_run_says_max_cost_would_be_refused_without_a_price(scripted_server, ten_trajectories, tmp_path):
    result = CliRunner().invoke(main, ["run", "--category", "counterfactual", "--input", str(ten_trajectories),
                                       "--model", "openai/scripted", "--api-base", scripted_server.api_base,
                                       "--max-cost", "20", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "refused            the run would stop here: --max-cost needs a price" in result.output
    assert scripted_server.requests == []


def test_max_cost_per_invocation_caps_each_invocation_alone(scripted_server, ten_trajectories, tmp_path):
    """The old meaning, under its own name: each invocation stops once it has spent the cap (the same command
    continues), whatever the run spent before."""
    scripted_server.script = lambda request: json.dumps(GOOD)
    out = tmp_path / "run"
    for expected in (2, 4):
        result = run(scripted_server, ten_trajectories, out, "--max-cost-per-invocation", "5", "--concurrency", "1")
        assert result.exit_code == 3, result.output
        assert "spent $6.0000, reaching --max-cost-per-invocation $5; run the same command again" in result.output
        assert len(read_jsonl(out / "candidates.jsonl")) == expected
    assert json.loads((out / "manifest.json").read_text())["spending"]["total"] == pytest.approx(12.0)


def test_with_two_workers_four_invocations_at_max_cost_20_spend_at_most_20(scripted_server, ten_trajectories,
                                                                           tmp_path):
    """Each worker process reserves within its share of what --max-cost leaves: the shares add up to the run's
    budget, so neither a worker's units in flight nor the next invocation can pass it (a worker once stopped only
    after reaching its share, with every unit it had in flight on top)."""
    scripted_server.script = lambda request: json.dumps(GOOD)
    out = tmp_path / "run"
    results = [run(scripted_server, ten_trajectories, out, "--max-cost", "20", "--workers", "2") for _ in range(4)]
    assert [result.exit_code for result in results] == [3, 3, 3, 3], results[0].output
    spent = sum(record["provenance"]["cost"] for record in read_jsonl(out / "candidates.jsonl"))
    assert spent <= 20.0 and spent == pytest.approx(3.0 * len(scripted_server.requests))
    # The workers' largest unit reaches the manifest: the next invocation reserves it before starting a unit.
    assert json.loads((out / "manifest.json").read_text())["spending"] == {"total": pytest.approx(spent),
                                                                          "largest_unit": pytest.approx(3.0)}
    assert "raise the cap to continue" in results[-1].output


def test_with_two_workers_a_fresh_run_sends_its_first_unit_alone(scripted_server, ten_trajectories, tmp_path):
    """No unit's cost is known yet: one unit goes first in the whole invocation, not one per worker. At --max-cost 4
    and $3 a unit the run spends $3 (each worker given its half once started a unit each: $6)."""
    scripted_server.script = lambda request: json.dumps(GOOD)
    result = run(scripted_server, ten_trajectories, tmp_path / "run", "--max-cost", "4", "--workers", "2")
    assert result.exit_code == 3, result.output
    assert len(scripted_server.requests) == 1 and "has spent $3.0000 of --max-cost $4" in result.output


def test_a_ray_worker_starts_a_unit_only_while_its_share_can_hold_it(scripted_server, ten_trajectories, tmp_path):
    """The Ray worker's own code, without Ray: with 4 slots and a $10 share of $3 units it once started 4 units
    before any had ended (and more while spent stayed under $10); now the first goes alone, then each unit
    reserves the largest so far: 3 units, $9."""
    import asyncio

    from injector import RunSpec, Taxonomy, load_trajectories
    from injector.engines import from_model
    from injector.runner.executors.ray_worker import ShardWorker, WorkerJob

    scripted_server.script = lambda request: json.dumps(GOOD)
    taxonomy = Taxonomy.load()
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["counterfactual"]), out=tmp_path / "run")
    engine = from_model("openai/scripted", api_base=scripted_server.api_base, use_cache=False, price_in=20000,
                        price_out=20000)
    engine.check_ready()
    job = WorkerJob(spec=spec, make_engine=lambda workers: engine, workers=1, concurrency=4, budget=10.0,
                    run_path=str(tmp_path / "run"), config_hash="abc", engine_description={}, append=False)
    worker = ShardWorker(job)
    worker._slots, worker.engine = asyncio.Semaphore(4), engine
    units = [(trajectory, "counterfactual", 0, False) for trajectory in load_trajectories(str(ten_trajectories))]
    result = asyncio.run(worker.process(units))
    assert sum(record.provenance.cost for record in result.records) == pytest.approx(9.0)
    assert len(scripted_server.requests) == 3 and result.budget_reached
