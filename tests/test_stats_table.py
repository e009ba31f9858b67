"""Issue 29: the `inject stats` table gives reject codes per category and the cost per candidate; `inject run`
prints its summary on every exit (0, 3 at --max-cost, 130 on Ctrl-C)."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from injector.cli.commands import main
from injector.records.directory import RunDirectory
from injector.records.models import Candidate, Rejection, RunManifest
from test_run_loop import GOOD, input_file, run_cli  # noqa: F401  (a fixture)

STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5."]


def _candidate(n: int, category: str, cost: float) -> Candidate:
    return Candidate(original_question="q", modified_question="q", original_process=STEPS,
                     modified_process=[STEPS[0], "Then $x + 3 = 6$.", STEPS[2]], modified_steps=[2], error_steps=[2],
                     reason="r", idx=f"t{n}", question="q", classification="circular", id=f"t{n}::{category}::0",
                     category=category, trajectory_id=f"t{n}", sample=0,
                     provenance={"engine": "llm", "cost": cost, "usage": {"prompt_tokens": 10}})


def _reject(n: int, category: str, code: str, cost: float) -> Rejection:
    return Rejection(id=f"r{n}::{category}::0", trajectory_id=f"r{n}", idx=f"r{n}", category=category, sample=0,
                     codes=[code], provenance={"engine": "llm", "cost": cost})


def make_run(path: Path) -> Path:
    directory = RunDirectory(path)
    directory.prepare("h")
    directory.write_manifest(RunManifest(command=[], config={}, config_hash="h", toolkit_version="0", started="now"))
    for record in (_candidate(1, "circular_logic", 0.02), _candidate(2, "circular_logic", 0.02),
                   _reject(1, "circular_logic", "parse_error", 0.02), _reject(2, "redundancy", "schema", 0.01),
                   _reject(3, "redundancy", "schema", 0.01), _candidate(3, "redundancy", 0.01)):
        directory.append(record)
    directory.release()
    return path


def test_the_stats_table_has_codes_per_category_and_cost_per_candidate(tmp_path):
    result = CliRunner().invoke(main, ["stats", str(make_run(tmp_path / "run"))])
    assert result.exit_code == 0, result.output
    assert "reject codes: schema 2, parse_error 1" in result.output
    assert "  circular_logic: parse_error 1\n  redundancy: schema 2" in result.output
    table = result.output.split("\n\n")[0]  # the main table (the funnel's, below it, has the same row names)
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.strip()}
    assert rows["circular_logic"][-1] == "$0.0300" and rows["redundancy"][-1] == "$0.0300"  # $0.06 / 2, $0.03 / 1
    assert rows["total"][-1] == "$0.0300"  # $0.09 / 3 candidates
    numbers = json.loads(CliRunner().invoke(main, ["stats", str(tmp_path / "run"), "--json"]).output)
    assert numbers["categories"]["redundancy"]["cost_per_candidate"] == 0.03


def test_the_summary_is_printed_when_max_cost_stops_the_run(scripted_server, input_file, tmp_path):
    scripted_server.script = lambda request: json.dumps(GOOD)
    result = run_cli(scripted_server, input_file, tmp_path / "run", "--price-in", "10", "--price-out", "20",
                     "--max-cost", "0.003", "--concurrency", "1")
    assert result.exit_code == 3, result.output
    assert "counterfactual                   1         0" in result.output
    assert "cost $0.0020 ($0.0020 per candidate)" in result.output


def test_the_summary_is_printed_on_ctrl_c(scripted_server, input_file, tmp_path, monkeypatch):
    import injector.runner.local as local

    real, calls = local.inject_one, []

    async def interrupted_after_one(*args, **kwargs):
        calls.append(1)
        if len(calls) > 1:
            raise KeyboardInterrupt
        return await real(*args, **kwargs)

    monkeypatch.setattr(local, "inject_one", interrupted_after_one)
    scripted_server.script = lambda request: json.dumps(GOOD)
    result = run_cli(scripted_server, input_file, tmp_path / "run", "--concurrency", "1")
    assert result.exit_code == 130, result.output
    assert "counterfactual                   1         0" in result.output and "Resume with" in result.output
