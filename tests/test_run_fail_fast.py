"""Issue 29: a configuration the provider refuses stops the run at the first answer (exit 2, the likely fix), writes
no rejects for units never tried, and the corrected command continues in the same run directory."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from scripted_server import Reply, ScriptedServer

from injector.cli.commands import main
from test_cli import CIRCULAR_EDITS, read_jsonl, trajectories_file  # noqa: F401  (a fixture)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def run_args(server: ScriptedServer, input_path: Path, out: Path, model: str, *extra: str) -> list[str]:
    return ["run", "--category", "circular_logic", "--input", str(input_path), "--model", model,
            "--api-base", server.api_base, "--out", str(out), *extra]


@pytest.fixture
def server():
    server = ScriptedServer().start()
    yield server
    server.stop()


def test_a_mistyped_model_stops_with_a_did_you_mean_and_the_fix_continues(server, trajectories_file, tmp_path):
    server.script = lambda request: json.dumps(CIRCULAR_EDITS)
    out = tmp_path / "run"
    result = invoke(*run_args(server, trajectories_file, out, "gtp-4o", "--client", "litellm"))
    assert result.exit_code == 2, result.output
    assert "LLM Provider NOT provided" in result.output and "did you mean gpt-4o?" in result.output
    assert "add openai/ before the name" in result.output
    assert len(server.requests) <= 1  # litellm refuses before sending anything
    assert read_jsonl(out / "rejects.jsonl") == [] and read_jsonl(out / "candidates.jsonl") == []
    result = invoke(*run_args(server, trajectories_file, out, "openai/scripted"))
    assert result.exit_code == 0, result.output
    assert "3 candidates, 0 rejects" in result.output


@pytest.mark.parametrize("client", ["litellm", "openai"])
def test_a_model_the_server_does_not_know_stops_after_one_request(server, trajectories_file, tmp_path, client):
    server.script = lambda request: (
        json.dumps(CIRCULAR_EDITS) if request["model"] == "scripted"
        else Reply(status=404, error=f"The model `{request['model']}` does not exist."))
    out = tmp_path / "run"
    result = invoke(*run_args(server, trajectories_file, out, "openai/gtp-4o", "--client", client))
    assert result.exit_code == 2, result.output
    assert "does not exist" in result.output and "did you mean openai/gpt-4o?" in result.output
    assert len(server.requests) == 1  # the first unit goes alone; its answer stops the run
    assert not (out / "rejects.jsonl").exists() or read_jsonl(out / "rejects.jsonl") == []
    assert invoke(*run_args(server, trajectories_file, out, "openai/scripted", "--client", client)).exit_code == 0
    assert len(read_jsonl(out / "candidates.jsonl")) == 3


def test_a_completion_budget_no_context_window_holds_stops_the_run(server, trajectories_file, tmp_path):
    server.script = lambda request: Reply(status=400, error=(
        "This model's maximum context length is 2048 tokens. However, you requested 4196 tokens (100 in the "
        "messages, 4096 in the completion). Please reduce the length of the messages or completion."))
    result = invoke(*run_args(server, trajectories_file, tmp_path / "run", "openai/small"))
    assert result.exit_code == 2, result.output
    assert "lower --max-tokens" in result.output and len(server.requests) == 1


def test_one_prompt_too_long_stays_a_reject(server, trajectories_file, tmp_path):
    def script(request):
        if len(server.requests) == 2:  # the second request only (they are recorded before the answer)
            return Reply(status=400, error="This model's maximum context length is 8192 tokens. However, your "
                                           "messages resulted in 9000 tokens.")
        return json.dumps(CIRCULAR_EDITS)
    server.script = script
    out = tmp_path / "run"
    result = invoke(*run_args(server, trajectories_file, out, "openai/scripted"))
    assert result.exit_code == 0, result.output
    [reject] = read_jsonl(out / "rejects.jsonl")
    assert reject["codes"] == ["provider_error"] and len(read_jsonl(out / "candidates.jsonl")) == 2
