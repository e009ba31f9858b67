"""The `inject` CLI end to end against the scripted server: outputs, resume, exit codes and messages."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from scripted_server import Reply

from injector.cli import main

QUESTION = "How many seconds are in 7.8 minutes?"
STEPS = [
    "7.8 minutes is the same as 7 minutes and 0.8 minutes.",
    "There are 60 * 7 = 420 seconds in 7 minutes.",
    "There are 60 * 0.8 = 48 seconds in 0.8 minutes.",
    "So in total there are 420 + 48 = 468 seconds.\n\n# Answer\n\n468",
]
CIRCULAR = {
    "modified_question": QUESTION,
    "modified_process": [STEPS[0], "Assume the total is 468 seconds; then 468 / 60 = 7.8 minutes, which matches.",
                         STEPS[2], STEPS[3]],
    "modified_steps": [2],
    "error_steps": [2],
    "reason": "Step 2 assumes the result it should derive.",
}
# The same injection as edits (the default output mode).
CIRCULAR_EDITS = {
    "question": None,
    "edits": [{"op": "replace", "step": 2, "text": CIRCULAR["modified_process"][1], "error": True}],
    "reason": CIRCULAR["reason"],
}


@pytest.fixture
def trajectories_file(tmp_path: Path) -> Path:
    path = tmp_path / "input.jsonl"
    rows = [{"id": f"t{k}", "question": QUESTION, "steps": STEPS[:3] + [STEPS[3] + " " * k], "answer": "468"}
            for k in range(3)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def invoke(*args: str, env: dict | None = None):
    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)


def run_args(server, input_path, out, *extra):
    return ["run", "--category", "circular_logic", "--input", str(input_path), "--model", "openai/scripted",
            "--api-base", server.api_base, "--out", str(out), *extra]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_run_writes_a_run_directory(scripted_server, trajectories_file, tmp_path):
    scripted_server.script = lambda request: json.dumps(CIRCULAR_EDITS)
    out = tmp_path / "run"
    result = invoke(*run_args(scripted_server, trajectories_file, out))
    assert result.exit_code == 0, result.output
    assert f"{out}: 3 candidates, 0 rejects (3 new, 0 already there)" in result.output
    candidates = read_jsonl(out / "candidates.jsonl")
    assert [c["id"] for c in candidates] == [f"t{k}::circular_logic::0" for k in range(3)] or len(candidates) == 3
    first = next(c for c in candidates if c["trajectory_id"] == "t0")
    assert first["classification"] == "circular" and first["category"] == "circular_logic"
    assert first["modified_steps"] == [2] and first["error_steps"] == [2]
    assert first["original_process"] == STEPS and first["idx"] == "t0"
    provenance = first["provenance"]
    assert provenance["model"] == "openai/scripted" and provenance["engine"] == "llm"
    assert provenance["api_base_host"] == f"127.0.0.1:{scripted_server.port}"
    assert provenance["usage"] == {"prompt_tokens": 100, "completion_tokens": 50}
    assert provenance["attempts"] == [{"codes": []}] and provenance["seed"] == 0
    assert provenance["output_mode"] == "edits"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["counts"]["candidates"] == 3
    assert manifest["totals"]["prompt_tokens"] == 300
    assert manifest["source"]["selected"] == 3
    # The request went out through litellm with a strict JSON-schema response_format and no hidden retries.
    body = scripted_server.requests[0]["body"]
    assert body["response_format"]["type"] == "json_schema"
    assert "edits" in body["response_format"]["json_schema"]["schema"]["properties"]
    assert body["messages"][0]["role"] == "system" and QUESTION in body["messages"][1]["content"]
    assert len(scripted_server.requests) == 3


def test_rerun_continues_and_other_config_is_refused(scripted_server, trajectories_file, tmp_path):
    scripted_server.script = lambda request: json.dumps(CIRCULAR_EDITS)
    out = tmp_path / "run"
    assert invoke(*run_args(scripted_server, trajectories_file, out, "--limit", "2")).exit_code == 0
    result = invoke(*run_args(scripted_server, trajectories_file, out))
    assert "3 candidates, 0 rejects (1 new, 2 already there)" in result.output
    assert len(scripted_server.requests) == 3
    result = invoke(*run_args(scripted_server, trajectories_file, out, "--temperature", "0.2"))
    assert result.exit_code == 2
    assert "holds a run with a different configuration" in result.output


def test_no_schema_and_seed(scripted_server, trajectories_file, tmp_path):
    scripted_server.script = lambda request: json.dumps(CIRCULAR_EDITS)
    result = invoke(*run_args(scripted_server, trajectories_file, tmp_path / "r", "--no-schema", "--seed", "7",
                              "--limit", "1"))
    assert result.exit_code == 0
    body = scripted_server.requests[0]["body"]
    assert "response_format" not in body and body["seed"] == 7


def test_rejects_keep_raw_codes_and_messages(scripted_server, trajectories_file, tmp_path):
    bad = dict(CIRCULAR, modified_steps=[])
    scripted_server.script = lambda request: "Here you go:\n```json\n" + json.dumps(bad) + "\n```"
    out = tmp_path / "run"
    full = ("--limit", "1", "--output-mode", "full")  # undeclared changes exist only in full mode
    assert invoke(*run_args(scripted_server, trajectories_file, out, *full)).exit_code == 0
    [reject] = read_jsonl(out / "rejects.jsonl")
    assert reject["codes"] == ["undeclared_change"] and "step 2" in reject["messages"][0]
    assert reject["raw"].startswith("Here you go")
    assert reject["provenance"]["attempts"] == [{"codes": ["undeclared_change"]}] * 3  # re-asked twice
    assert reject["provenance"]["usage"] == {"prompt_tokens": 300, "completion_tokens": 150}  # summed
    # --retry-rejects redoes it; on success the reject is removed, so each unit is in exactly one file.
    scripted_server.script = lambda request: json.dumps(CIRCULAR)
    assert invoke(*run_args(scripted_server, trajectories_file, out, *full, "--retry-rejects")).exit_code == 0
    assert read_jsonl(out / "rejects.jsonl") == [] and len(read_jsonl(out / "candidates.jsonl")) == 1


@pytest.mark.parametrize(("reply", "code"), [
    (Reply(status=400, error="bad request: unsupported thing"), "provider_error"),
    (Reply(status=404, error="model not found"), "provider_error"),
    ("this is not json at all", "parse_error"),
    (json.dumps({"edits": "oops", "reason": ""}), "schema"),
])
def test_provider_and_parse_failures_are_rejects(scripted_server, trajectories_file, tmp_path, reply, code):
    scripted_server.script = lambda request: reply
    out = tmp_path / "run"
    result = invoke(*run_args(scripted_server, trajectories_file, out, "--limit", "1"))
    assert result.exit_code == 0
    [reject] = read_jsonl(out / "rejects.jsonl")
    assert reject["codes"] == [code]
    if code == "provider_error":
        assert reply.error in reject["messages"][0]
        assert len(scripted_server.requests) == 1  # not retried


def test_authentication_refused_stops_with_exit_2(scripted_server, trajectories_file, tmp_path):
    scripted_server.script = lambda request: Reply(status=401, error="invalid api key")
    result = invoke(*run_args(scripted_server, trajectories_file, tmp_path / "run"))
    assert result.exit_code == 2
    assert "refused the credentials" in result.output
    assert len(scripted_server.requests) <= 8  # stopped, not one per unit with retries


def test_missing_key_names_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    result = invoke("run", "--category", "redundancy", "--model", "gpt-4o", "--out", str(tmp_path / "r"))
    assert result.exit_code == 2
    assert "set OPENAI_API_KEY in the environment" in result.output


def test_inject_model_environment_variable(scripted_server, trajectories_file, tmp_path):
    scripted_server.script = lambda request: json.dumps(CIRCULAR_EDITS)
    result = invoke("run", "--category", "circular_logic", "--input", str(trajectories_file), "--api-base",
                    scripted_server.api_base, "--out", str(tmp_path / "r"), "--limit", "1",
                    env={"INJECT_MODEL": "openai/from-env"})
    assert result.exit_code == 0, result.output
    assert scripted_server.requests[0]["body"]["model"] == "from-env"


def test_unknown_category_suggests(tmp_path):
    result = invoke("render", "--category", "circular")
    assert result.exit_code == 2
    assert "unknown category 'circular'. Did you mean 'circular_logic'?" in result.output


def test_bad_input_line_exit_2(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "q", "steps": ["s"]}) + "\n{not json\n")
    result = invoke("render", "--category", "redundancy", "--input", str(path))
    assert result.exit_code == 2
    assert f"{path}:2:" in result.output
    result = invoke("render", "--category", "redundancy", "--input", str(path), "--skip-invalid")
    assert result.exit_code == 0 and "invalid 1" in result.output


def test_render_prints_messages_without_a_model():
    result = invoke("render", "--category", "circular_logic", "--limit", "1")
    assert result.exit_code == 0
    assert "--- system ---" in result.output and "--- user ---" in result.output
    assert "Non-Circular Logic" in result.output or "circular" in result.output.lower()


def test_categories_lists_the_nine():
    result = invoke("categories")
    assert result.exit_code == 0
    for category_id in ["redundancy", "circular_logic", "counterfactual", "step_contradiction",
                        "domain_inconsistency", "confidence", "missing_condition", "deception", "multi_solution"]:
        assert category_id in result.output


def test_internal_error_is_one_line_with_saved_traceback(monkeypatch):
    import injector.taxonomy

    def boom(*args, **kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(injector.taxonomy.Taxonomy, "load", classmethod(boom))
    result = invoke("categories")
    assert result.exit_code == 1
    assert "internal error: RuntimeError: kaboom (traceback saved to " in result.output
    saved = Path(result.output.split("traceback saved to ")[1].split(")")[0])
    assert "kaboom" in saved.read_text()


def test_help_does_not_import_litellm():
    code = ("import sys; from click.testing import CliRunner; from injector.cli import main; "
            "r = CliRunner().invoke(main, ['run', '--help']); assert r.exit_code == 0, r.output; "
            "print('litellm' in sys.modules)")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_run_with_the_provider_unreachable_exits_5(trajectories_file, tmp_path, monkeypatch):
    from injector.engines.llm import LLMEngine

    monkeypatch.setattr(LLMEngine, "_retry_delay", lambda self, error, failures: 0)  # retries, without waiting
    out = tmp_path / "run"
    args = ["run", "--category", "circular_logic", "--input", str(trajectories_file), "--model", "openai/scripted",
            "--api-base", f"http://127.0.0.1:{closed_port()}/v1", "--out", str(out), "--limit", "2"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 5, result.output
    assert f"{out}: 0 candidates, 2 rejects" in result.stdout
    assert "no candidates: 2 of 2 units failed transiently after every retry (last: " in result.stderr
    assert "Connection error" in result.stderr and "check --api-base and the network" in result.stderr
    assert result.stderr.rstrip().endswith("exit 5, run the same command again to retry them")
    assert {r["codes"][0] for r in read_jsonl(out / "rejects.jsonl")} == {"transient_failure"}


def test_run_with_some_candidates_and_transient_failures_exits_0(scripted_server, trajectories_file, tmp_path,
                                                                monkeypatch):
    from injector.engines.llm import LLMEngine

    monkeypatch.setattr(LLMEngine, "_retry_delay", lambda self, error, failures: 0)
    replies = iter([json.dumps(CIRCULAR_EDITS)])
    scripted_server.script = lambda request: next(replies, Reply(status=503, error="overloaded"))
    out = tmp_path / "run"
    result = invoke(*run_args(scripted_server, trajectories_file, out, "--limit", "2", "--concurrency", "1"))
    assert result.exit_code == 0 and f"{out}: 1 candidates, 1 rejects" in result.output
    assert "no candidates" not in result.output
