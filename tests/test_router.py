"""Several servers, one run (a litellm Router): routing around a failing server, cache and resume that do not depend
on the servers' addresses, and deployments files checked line by line."""
from __future__ import annotations

import itertools
import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from scripted_server import Reply, ScriptedServer

from injector import RunSpec, Taxonomy, load_trajectories, run
from injector.cli.commands import main
from injector.engines import RouterEngine, from_model
from injector.engines.deployments import Deployment, DeploymentSet, load_deployments
from injector.util.errors import InputError

QUESTION = "What is $2 + 3$?"
STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
GOOD = {"question": None, "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.", "error": True}],
        "reason": "2 + 3 is 5, not 6."}
UNITS = 40


@pytest.fixture
def input_file(tmp_path: Path) -> Path:
    path = tmp_path / "input.jsonl"
    rows = [{"id": f"t{k}", "question": QUESTION, "steps": [*STEPS[:2], STEPS[2] + "." * k], "answer": "5"}
            for k in range(UNITS)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def servers():
    started = [ScriptedServer().start() for _ in range(4)]
    yield started
    for server in started:
        server.stop()


def failing_every_other_request(server: ScriptedServer) -> None:
    """Half of this server's answers are 500s (alternating, so the test does not depend on chance)."""
    counter = itertools.count()
    lock = threading.Lock()

    def script(request):
        with lock:
            n = next(counter)
        return Reply(status=500, error="scripted outage") if n % 2 == 0 else json.dumps(GOOD)

    server.script = script


def engine_over(*servers: ScriptedServer, **options) -> RouterEngine:
    deployments = DeploymentSet([Deployment(model="openai/scripted", api_base=s.api_base) for s in servers],
                                cooldown_seconds=0.05, allowed_fails=2)
    options = {"backoff_seconds": 0, "transient_attempts": 30, **options}
    return RouterEngine(deployments, model="scripted", **options)


def spec(out: Path) -> RunSpec:
    taxonomy = Taxonomy.load()
    return RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["counterfactual"]), out=out, concurrency=8)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_server_failing_half_the_time_loses_no_unit_and_both_servers_answer(servers, input_file, tmp_path):
    healthy, flaky = servers[:2]
    healthy.script = lambda request: json.dumps(GOOD)
    failing_every_other_request(flaky)
    engine = engine_over(healthy, flaky)
    result = run(load_trajectories(input_file), spec(tmp_path / "run"), engine)
    candidates = read_jsonl(tmp_path / "run" / "candidates.jsonl")
    assert len(candidates) == UNITS and read_jsonl(tmp_path / "run" / "rejects.jsonl") == []
    assert sorted(c["id"] for c in candidates) == sorted(f"t{k}::counterfactual::0" for k in range(UNITS))
    answered_by = {c["provenance"]["deployment"] for c in candidates}
    assert answered_by == {f"127.0.0.1:{healthy.port}", f"127.0.0.1:{flaky.port}"}
    assert engine.retries >= 1 and any(r.get("body") for r in flaky.requests)
    # An unknown model's price stays unknown after the Router has run (it registers deployments with no price).
    assert engine.prices() is None and {c["provenance"]["cost"] for c in candidates} == {None}
    assert result.manifest.deployments == [
        {"model": "openai/scripted", "api_base_host": f"127.0.0.1:{s.port}", "rpm": None, "tpm": None,
         "api_key_env": None} for s in (healthy, flaky)]


def test_other_servers_of_the_same_model_resume_the_run_and_hit_the_cache(servers, input_file, tmp_path):
    first, second, third, fourth = servers
    for server in servers:
        server.script = lambda request: json.dumps(GOOD)
    run(load_trajectories(input_file), spec(tmp_path / "run"), engine_over(first, second, cache=_cache(tmp_path)))
    sent = len(first.requests) + len(second.requests)
    assert sent == UNITS
    # Same directory, other addresses: the configuration is the same, so the run resumes and sends nothing.
    resumed = run(load_trajectories(input_file), spec(tmp_path / "run"),
                  engine_over(third, fourth, cache=_cache(tmp_path)))
    assert resumed.progress.skipped_existing == UNITS and resumed.manifest.config_hash == _hash(tmp_path / "run")
    # A new directory through the new servers: every answer comes from the cache.
    fresh = run(load_trajectories(input_file), spec(tmp_path / "again"),
                engine_over(third, fourth, cache=_cache(tmp_path)))
    assert fresh.progress.accepted == UNITS and third.requests == [] and fourth.requests == []
    assert fresh.manifest.config_hash == resumed.manifest.config_hash
    # Another model is another configuration.
    other = DeploymentSet([Deployment(model="openai/other", api_base=third.api_base)])
    assert RouterEngine(other, model="scripted").describe() != engine_over(third).describe()


def _cache(tmp_path: Path):
    from injector.engines.cache import RequestCache

    return RequestCache(tmp_path / "cache.sqlite")


def _hash(out: Path) -> str:
    return json.loads((out / "manifest.json").read_text())["config_hash"]


def test_repeated_api_base_on_the_command_line_builds_a_router(servers, input_file, tmp_path):
    first, second = servers[:2]
    for server in (first, second):
        server.script = lambda request: json.dumps(GOOD)
    result = CliRunner().invoke(main, [
        "run", "--category", "counterfactual", "--input", str(input_file), "--limit", "6", "--model",
        "openai/scripted", "--api-base", first.api_base, "--api-base", second.api_base, "--out",
        str(tmp_path / "run")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["config"]["deployment_models"] == ["openai/scripted"]
    assert manifest["config"]["api_base_host"] is None
    assert [d["api_base_host"] for d in manifest["deployments"]] == [f"127.0.0.1:{first.port}",
                                                                    f"127.0.0.1:{second.port}"]
    assert len(read_jsonl(tmp_path / "run" / "candidates.jsonl")) == 6


def test_a_deployments_file_runs_with_keys_from_the_environment(servers, input_file, tmp_path, monkeypatch):
    first, second = servers[:2]
    for server in (first, second):
        server.script = lambda request: json.dumps(GOOD)
    monkeypatch.setenv("GPU_B_CRED", "b-secret-value-123")  # a name redaction would not guess holds a key
    file = tmp_path / "deployments.yaml"
    file.write_text(f"model: scripted\ndeployments:\n  - model: openai/scripted\n    api_base: {first.api_base}\n"
                    f"    rpm: 6000\n  - model: openai/scripted\n    api_base: {second.api_base}\n    rpm: 6000\n"
                    "    api_key_env: GPU_B_CRED\n")
    result = CliRunner().invoke(main, [
        "run", "--category", "counterfactual", "--input", str(input_file), "--limit", "20", "--deployments",
        str(file), "--out", str(tmp_path / "run")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    keys = {value for r in second.requests for name, value in r["headers"].items() if name.lower() == "authorization"}
    assert keys == {"Bearer b-secret-value-123"}
    manifest_text = (tmp_path / "run" / "manifest.json").read_text()
    assert "b-secret" not in manifest_text
    from injector.util.redaction import redact

    assert redact("the provider said: bad key b-secret-value-123") == "the provider said: bad key [redacted]"
    manifest = json.loads(manifest_text)
    assert manifest["deployments"][1] == {"model": "openai/scripted", "api_base_host": f"127.0.0.1:{second.port}",
                                          "rpm": 6000, "tpm": None, "api_key_env": "GPU_B_CRED"}
    assert manifest["config"]["model"] == "scripted"


@pytest.mark.parametrize("text, line, words", [
    ("deployments:\n  - model: openai/x\n    api_key: sk-abcdefghijkl\n", 3, "secret in the file"),
    ("deployments:\n  - model: openai/x\n    api_key_env: sk-abcdefghijkl\n", 3, "looks like an API key"),
    ("deployments:\n  - model: openai/x\n    api_key_env: my key\n", 3, "NAME of an environment variable"),
    ("deployments:\n  - model: openai/x\n    api_base: http://u:pw@host/v1\n", 3, "carries credentials"),
    ("deployments:\n  - api_base: http://host/v1\n", 2, "needs `model`"),
    ("deployments:\n  - model: openai/x\n    rpm: -5\n", 3, "more than 0"),
    ("deployments:\n  - model: openai/x\n    rpm: fast\n", 3, "must be a number"),
    ("deployments:\n  - model: openai/x\n    apibase: http://host/v1\n", 3, "unknown key `apibase`"),
    ("deployments:\n  - model: openai/x\n    api_base: ftp://host\n", 3, "not an http(s) URL"),
    ("deployments: []\n", 1, "non-empty list"),
    ("cooldown_seconds: soon\ndeployments:\n  - model: openai/x\n", 1, "must be a number"),
    ("servers:\n  - model: openai/x\n", 1, "unknown key `servers`"),
    ("deployments:\n  - model: [openai/x\n", 3, "not valid YAML"),
])
def test_bad_deployments_files_name_file_and_line_and_exit_2(tmp_path, input_file, text, line, words):
    file = tmp_path / "d.yaml"
    file.write_text(text)
    with pytest.raises(InputError) as caught:
        load_deployments(file)
    assert caught.value.line == line and words in str(caught.value)
    result = CliRunner().invoke(main, ["run", "--category", "counterfactual", "--input", str(input_file),
                                       "--deployments", str(file), "--model", "openai/x",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert result.output.startswith(f"error: {file}:{line}: ") and "Traceback" not in result.output
    assert "sk-abcdefghijkl" not in result.output
    assert not (tmp_path / "run").exists()


def test_a_missing_key_variable_is_exit_2_naming_the_deployment(tmp_path, input_file, monkeypatch):
    monkeypatch.delenv("NOT_SET_KEY", raising=False)
    file = tmp_path / "d.yaml"
    file.write_text("deployments:\n  - model: openai/x\n    api_base: http://127.0.0.1:9/v1\n"
                    "    api_key_env: NOT_SET_KEY\n")
    result = CliRunner().invoke(main, ["run", "--category", "counterfactual", "--input", str(input_file),
                                       "--deployments", str(file), "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert result.output == f"error: {file}:2: the environment variable NOT_SET_KEY is not set; export it with " \
                            "the key of openai/x\n"


def test_several_models_need_a_name_and_both_options_at_once_are_refused(tmp_path):
    file = tmp_path / "d.yaml"
    file.write_text("deployments:\n  - model: openai/a\n  - model: openai/b\n")
    with pytest.raises(Exception, match="serve several models"):
        from_model(None, deployments=file)
    assert from_model("group", deployments=file).describe()["deployment_models"] == ["openai/a", "openai/b"]
    with pytest.raises(Exception, match="not both"):
        from_model("openai/a", deployments=file, api_base="http://127.0.0.1:1/v1")


def test_the_run_limit_is_the_sum_of_the_deployments_limits():
    limited = DeploymentSet([Deployment(model="m", rpm=60), Deployment(model="m", rpm=120)])
    assert RouterEngine.limiter_for(limited, None, None)._requests.time_period == pytest.approx(60 / 180)
    assert RouterEngine.limiter_for(limited, 30, None)._requests.time_period == pytest.approx(2.0)
    unlimited = DeploymentSet([Deployment(model="m", rpm=60), Deployment(model="m")])
    assert RouterEngine.limiter_for(unlimited, None, None)._requests is None
