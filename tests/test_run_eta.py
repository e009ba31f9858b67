"""Issue 29 item 2: `inject run` itself warns at its start (one line on stderr and in log.jsonl) when the time its
--rpm/--tpm imply for the units left exceeds an hour, as the dry run does."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_run_loop import GOOD, QUESTION, STEPS, read_jsonl

INJECT = [sys.executable, "-c", "from injector.cli.commands import main; main()"]

# $3 a unit (the scripted server's 150 tokens at $20,000 per million): --max-cost-per-invocation 1 stops each
# invocation after its first unit, so the slow limits never hold the test up.
STOP_AFTER_ONE = ("--price-in", "20000", "--price-out", "20000", "--max-cost-per-invocation", "1")


def _run(server, tmp_path: Path, *extra: str):
    path = tmp_path / "input.jsonl"
    path.write_text("".join(json.dumps({"id": f"t{k}", "question": f"{QUESTION} (case {k})", "steps": STEPS,
                                                "answer": "5"}) + "\n"
                            for k in range(1000)))
    # A process of its own: the terminal's warnings are what the CLI's log handler writes to the real stderr.
    return subprocess.run([*INJECT, "run", "--category", "counterfactual", "--input", str(path), "--model",
                           "openai/scripted", "--api-base", server.api_base, "--out", str(tmp_path / "run"),
                           *STOP_AFTER_ONE, *extra], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OPENAI_API_KEY": "sk-test-placeholder"})


def _warnings(tmp_path: Path) -> list[dict]:
    return [line for line in read_jsonl(tmp_path / "run" / "log.jsonl") if line["event"] == "long_run"]


def test_a_run_whose_tpm_implies_over_an_hour_warns_once_at_its_start(scripted_server, tmp_path):
    scripted_server.script = lambda request: json.dumps(GOOD)
    result = _run(scripted_server, tmp_path, "--tpm", "6000")
    assert result.returncode == 3, result.stderr
    lines = [line for line in result.stderr.splitlines() if "the rate limits imply" in line]
    assert len(lines) == 1 and lines[0].startswith("warning: the rate limits imply at least ")
    assert "for the 1000 units left" in lines[0] and "at --tpm 6000 this run takes over an hour" in lines[0]
    [logged] = _warnings(tmp_path)
    assert logged["level"] == "warning" and logged["tpm"] == 6000 and logged["units_left"] == 1000
    assert logged["eta_seconds"] > 3600 and logged["message"] in lines[0]
    assert len(scripted_server.requests) == 1  # the warning sends nothing of its own


def test_no_warning_when_the_limits_allow_the_run_within_an_hour(scripted_server, tmp_path):
    scripted_server.script = lambda request: json.dumps(GOOD)
    result = _run(scripted_server, tmp_path, "--tpm", "6000", "--limit", "20")  # 20 units: about 10 minutes
    assert result.returncode == 3, result.stderr
    assert "the rate limits imply" not in result.stderr and _warnings(tmp_path) == []
