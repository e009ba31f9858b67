"""Exact output of the CLI's run summary table and of `inject categories` (what a user reads, pinned whole)."""
from __future__ import annotations

import json
import threading
from pathlib import Path

from click.testing import CliRunner
from test_cli import CIRCULAR_EDITS, trajectories_file  # noqa: F401 (a fixture)

from injector.cli.commands import main


def test_run_summary_table_is_exact(scripted_server, trajectories_file, tmp_path):  # noqa: F811
    # circular_logic: a valid injection each time; redundancy: one answer that is not JSON, then two without edits.
    redundancy_replies = ["not an answer", json.dumps({"question": None, "edits": [], "reason": "none"})]
    lock = threading.Lock()  # the server answers on several threads

    def script(request: dict) -> str:
        if "# Category: circular logic" in request["messages"][0]["content"]:
            return json.dumps(CIRCULAR_EDITS)
        with lock:
            return redundancy_replies.pop(0) if len(redundancy_replies) > 1 else redundancy_replies[0]

    scripted_server.script = script
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [
        "run", "--category", "circular_logic", "--category", "redundancy", "--input", str(trajectories_file),
        "--model", "openai/scripted", "--api-base", scripted_server.api_base, "--out", str(out),
        "--max-attempts", "1", "--price-in", "2.5", "--price-out", "10"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    # 6 answers of 100 prompt + 50 completion tokens at $2.5 / $10 per million: $0.0045.
    assert result.stderr[result.stderr.index("category   "):] == (
        "category                  accepted  rejected\n"
        "circular_logic                   3         0\n"
        "redundancy                       0         3\n"
        "total                            3         3\n"
        "\n"
        "reason code                rejects\n"
        "no_error_steps                   2\n"
        "parse_error                      1\n"
        "\n"
        "tokens: 600 prompt + 300 completion; cost $0.0045 ($0.0015 per candidate); 0 transient retries\n"
    )
    assert result.stdout == f"{out}: 3 candidates, 3 rejects (6 new, 0 already there)\n"


def test_categories_output_is_exact(tmp_path: Path):
    (tmp_path / "unit.j2").write_text('{% extends "_base.j2" %}{% block guidance %}Slip.{% endblock %}')
    (tmp_path / "taxonomy.yaml").write_text(
        "name: mine\n"
        "categories:\n"
        "  - {id: unit_slip, name: Unit Consistency, definition: State a result in the wrong unit., "
        "template: unit.j2, domain: soundness}\n"
        "  - {id: sign_error, name: Sign Slip, definition: Flip one sign., template: unit.j2}\n")
    result = CliRunner().invoke(main, ["categories", "--taxonomy", str(tmp_path / "taxonomy.yaml")])
    assert result.exit_code == 0, result.output
    assert result.output == (
        "taxonomy mine: 2 categories\n"
        "unit_slip              Unit Consistency             soundness    unit_slip\n"
        "                       State a result in the wrong unit.\n"
        "sign_error             Sign Slip                                 sign_error\n"
        "                       Flip one sign.\n"
    )


def test_bundled_categories_columns_are_exact():
    # The id / name / domain / PRMBench file columns of the bundled taxonomy; each is followed by its definition.
    result = CliRunner().invoke(main, ["categories"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "taxonomy prmbench: 9 categories"
    assert lines[1::2] == [
        "redundancy             Non-Redundancy               simplicity   redundency",
        "circular_logic         Non-Circular Logic           simplicity   circular",
        "counterfactual         Empirical Soundness          soundness    counterfactual",
        "step_contradiction     Step Consistency             soundness    step_contradiction",
        "domain_inconsistency   Domain Consistency           soundness    domain_inconsistency",
        "confidence             Confidence Invariance        soundness    confidence",
        "missing_condition      Prerequisite Sensitivity     sensitivity  missing_condition",
        "deception              Deception Resistance         sensitivity  deception",
        "multi_solution         Multi-Solution Consistency   sensitivity  multi_solutions",
    ]
    assert all(line.startswith(" " * 23) and len(line) > 40 for line in lines[2::2])
