"""The `inject` CLI end to end against the scripted server: outputs, resume, exit codes and messages."""
from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from scripted_server import Reply

from injector.cli.commands import main

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
    assert "smoke-test" not in result.output  # a model's candidates: no offline-engine notice
    candidates = read_jsonl(out / "candidates.jsonl")
    # Units finish in any order under concurrency; the set of ids is exact.
    assert sorted(c["id"] for c in candidates) == [f"t{k}::circular_logic::0" for k in range(3)]
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
    (Reply(status=422, error="unprocessable entity"), "provider_error"),
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
    assert "# Category: circular logic (Non-Circular Logic)" in result.output
    assert result.output.startswith("=== prm800k:sample:1 / circular_logic ===\n--- system ---\n")


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


def test_crash_reports_go_to_the_user_cache_under_unpredictable_names(monkeypatch, tmp_path, private_cache):
    import tempfile

    import injector.taxonomy
    from injector.cli.commands import crash_dir

    def boom(*args, **kwargs):
        raise RuntimeError("kaboom")

    shared_tmp = tmp_path / "shared-tmp"
    shared_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared_tmp))
    monkeypatch.setattr(injector.taxonomy.Taxonomy, "load", classmethod(boom))
    outputs = [invoke("categories").output for _ in range(2)]  # two crashes in the same second
    saved = [Path(output.split("traceback saved to ")[1].split(")")[0]) for output in outputs]
    assert saved[0] != saved[1] and all(path.parent == crash_dir() for path in saved)
    assert crash_dir().is_relative_to(private_cache)  # tests point it at tmp_path: nothing left behind
    assert all(path.stat().st_mode & 0o777 == 0o600 and not path.is_symlink() for path in saved)
    assert list(shared_tmp.iterdir()) == []  # nothing in the system temp directory


def test_an_internal_error_never_prints_or_saves_a_key(monkeypatch, private_cache):
    """A bug whose message carries a key (e.g. a URL with credentials) must not put it on the terminal or in the
    crash report, which a user may attach to an issue."""
    import injector.taxonomy

    key = "sk-live-0123456789abcdefghij"

    def boom(*args, **kwargs):
        raise RuntimeError(f"could not reach https://user:{key}@host/v1?api_key={key}")

    monkeypatch.setattr(injector.taxonomy.Taxonomy, "load", classmethod(boom))
    output = invoke("categories").output
    assert output.startswith("internal error: RuntimeError: could not reach") and key not in output
    saved = Path(output.split("traceback saved to ")[1].split(")")[0])
    assert "RuntimeError" in saved.read_text() and key not in saved.read_text()


def test_an_unwritable_crash_directory_still_gives_one_line(monkeypatch, tmp_path):
    import injector.taxonomy

    def boom(*args, **kwargs):
        raise RuntimeError("kaboom")

    (tmp_path / "not-a-dir").write_text("")
    monkeypatch.setattr("injector.cli.base.crash_dir", lambda: tmp_path / "not-a-dir" / "crashes")
    monkeypatch.setattr(injector.taxonomy.Taxonomy, "load", classmethod(boom))
    result = invoke("categories")
    assert result.exit_code == 1
    assert result.output.startswith("internal error: RuntimeError: kaboom (the traceback could not be saved: ")
    assert len(result.output.splitlines()) == 1


def into_a_closed_pipe(*args: str) -> tuple[int, str]:
    """Run `inject ARGS | head -0`: the reader is gone before anything is written. Returns (exit code, stderr)."""
    process = subprocess.Popen([sys.executable, "-c", "from injector.cli.commands import main; main()", *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    process.stdout.close()
    stderr = process.stderr.read()
    return process.wait(timeout=300), stderr


@pytest.mark.parametrize("args", [
    ("render", "--category", "circular_logic", "--limit", "5"),  # fails while writing
    ("categories",),  # small: fails in the flush at exit
    ("audit", "--report-only",
     str(Path(__file__).parent / "fixtures" / "prmbench" / "prm_test_p12_multi_solutions.first10.jsonl")),
])
def test_a_closed_pipe_ends_silently_with_141(args):
    from injector.cli.commands import crash_dir

    code, stderr = into_a_closed_pipe(*args)
    assert code == 141, stderr
    assert "Traceback" not in stderr and "error" not in stderr.lower() and "Exception" not in stderr
    assert not crash_dir().exists()


def test_help_does_not_import_litellm():
    code = ("import sys; from click.testing import CliRunner; from injector.cli.commands import main; "
            "r = CliRunner().invoke(main, ['run', '--help']); assert r.exit_code == 0, r.output; "
            "print('litellm' in sys.modules)")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"


def test_help_loads_no_part_of_the_library_it_does_not_show():
    """`inject --help` (and `inject run --help`) import click and the option values only: no client, no pydantic
    models, no templates (the lazy `injector` package; `injector.model.choices`)."""
    code = ("import sys; from click.testing import CliRunner; from injector.cli.commands import main; "
            "assert all(CliRunner().invoke(main, args).exit_code == 0 for args in (['--help'], ['run', '--help'])); "
            "print(sorted(m for m in ('litellm', 'openai', 'pydantic', 'jinja2', 'yaml', 'injector.runner.loop', "
            "'injector.taxonomy', 'injector.curate.review.store') if m in sys.modules))")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


def test_damaged_inputs_are_one_line_and_exit_2(scripted_server, tmp_path):
    import gzip

    not_gzip = tmp_path / "plain.jsonl.gz"
    not_gzip.write_text(json.dumps({"id": "a", "question": "q", "steps": ["s"]}) + "\n")
    result = invoke("render", "--category", "redundancy", "--input", str(not_gzip))
    assert result.exit_code == 2 and result.output.startswith(f"error: {not_gzip}:1: not gzip data")
    # Cut in the middle: the run reads (and writes units of) the first lines, then stops at the damage.
    rows = [{"id": f"t{k}", "question": f"{QUESTION} ({k})", "steps": STEPS,
             "meta": {"noise": hashlib.sha256(b"%d" % k).hexdigest() * 8}} for k in range(100)]
    data = gzip.compress("".join(json.dumps(row) + "\n" for row in rows).encode())
    truncated = tmp_path / "cut.jsonl.gz"
    truncated.write_bytes(data[: len(data) // 2])
    out = tmp_path / "r"
    result = invoke("run", "--category", "redundancy", "--input", str(truncated), "--out", str(out))
    assert result.exit_code == 2, result.output
    [error] = [line for line in result.output.splitlines() if "error" in line]
    assert re.fullmatch(rf"error: {re.escape(str(truncated))}:\d+: the gzip data ends early .*", error)
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
    written = read_jsonl(out / "candidates.jsonl") + read_jsonl(out / "rejects.jsonl")
    assert 0 < len(written) < 100  # what was read before the damage is kept


def test_audit_of_a_non_utf8_file_is_one_line_and_exit_2(tmp_path):
    path = tmp_path / "latin1.jsonl"
    good = (Path(__file__).parent / "fixtures" / "prmbench" / "prm_test_p12_multi_solutions.first10.jsonl")
    path.write_bytes(good.read_bytes().splitlines(keepends=True)[0] + "caf\u00e9\n".encode("latin-1"))
    result = invoke("audit", str(path))
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines()[-1] == f"error: {path}:2: not UTF-8 text; save the file as UTF-8"


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


@pytest.mark.parametrize("extra, word", [(["--batch"], "--batch"), (["--deployments", "deployments.yaml"], "--deployments")])
def test_the_ray_executor_refuses_what_one_process_must_do(tmp_path, monkeypatch, extra, word):
    _refused(tmp_path, monkeypatch, ["--executor", "ray", *extra], word, "--executor ray")


@pytest.mark.parametrize("extra, word", [(["--executor", "ray"], "--ray-workers"), (["--batch"], "--batch"),
                                         (["--deployments", "deployments.yaml"], "--deployments")])
def test_worker_processes_refuse_what_they_cannot_divide(tmp_path, monkeypatch, extra, word):
    _refused(tmp_path, monkeypatch, ["--workers", "2", *extra], word, "--workers")


def _refused(tmp_path, monkeypatch, options, *words):
    # A batch run needs one process; a Router in each worker would pace every server at its full limit.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deployments.yaml").write_text("deployments:\n  - model: openai/m\n    api_base: http://127.0.0.1:9/v1\n")
    result = CliRunner().invoke(main, ["run", "--category", "circular_logic", "--model", "openai/m", "--out",
                                       str(tmp_path / "run"), *options])
    assert result.exit_code == 2, result.output
    assert all(word in result.output for word in words), result.output
    assert not (tmp_path / "run" / "candidates.jsonl").exists()


def test_an_offline_run_says_its_candidates_are_smoke_test_negatives(tmp_path):
    result = invoke("run", "--category", "circular_logic", "--limit", "4", "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert "the offline engine's candidates are smoke-test negatives, not benchmark-grade" in result.output
