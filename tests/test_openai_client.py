"""The openai SDK path (`--client openai`) against litellm's (`--client litellm`): the same requests on the wire,
the same reason codes for the same HTTP answers, the same costs, and one cache for both."""
from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest
from scripted_server import Reply, ScriptedServer

from injector import LLMEngine, Taxonomy, Trajectory, inject_one
from injector.engines.base import ProviderError, TransientProviderError
from injector.engines.openai_client import choose_client, model_entry, price_table, serves
from injector.util.errors import AuthenticationRefused, ProviderMisconfigured, UserError
from injector.model.provenance import Usage
from injector.records.models import Candidate, Rejection

STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
TRAJECTORY = Trajectory(id="t", question="What is $2 + 3$?", steps=STEPS, answer="5")
ANSWER = json.dumps({"question": None, "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.",
                                                  "error": True}], "reason": "2 + 3 is 5, not 6."})
CLIENTS = ("litellm", "openai")


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return Taxonomy.load()


@pytest.fixture
def server():
    server = ScriptedServer().start()
    yield server
    server.stop()


def run_one(taxonomy, engine, **options):
    return asyncio.run(inject_one(taxonomy, taxonomy.category("counterfactual"), TRAJECTORY, engine, **options))


def engine_for(client, server, model="openai/scripted", **options):
    engine = LLMEngine(model, api_base=server.api_base, backoff_seconds=0, client=client, **options)
    engine.check_ready()
    return engine


@pytest.mark.parametrize("model", ["openai/scripted", "hosted_vllm/scripted", "openai/gpt-4o"])
def test_both_clients_send_the_same_request(taxonomy, server, model, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("HOSTED_VLLM_API_KEY", raising=False)
    server.script = lambda request: ANSWER
    records = {}
    for client in CLIENTS:
        engine = engine_for(client, server, model)
        assert engine.client == client
        records[client] = run_one(taxonomy, engine)
    assert all(isinstance(record, Candidate) for record in records.values())
    (first, second) = server.requests
    assert first["path"] == second["path"] == "/v1/chat/completions"
    assert first["body"] == second["body"]  # model name, messages, seed, max_tokens, response_format: all of it
    assert "response_format" in first["body"] and first["body"]["model"] == model.split("/", 1)[1]
    auth = [{k.lower(): v for k, v in request["headers"].items()}["authorization"] for request in server.requests]
    assert auth[0] == auth[1]
    usage = [records[client].provenance.usage for client in CLIENTS]
    assert usage[0] == usage[1] == Usage(prompt_tokens=100, completion_tokens=50)


def test_costs_and_prices_agree_with_litellm(taxonomy, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0000000000")
    server.script = lambda request: ANSWER
    costs, prices, schema = {}, {}, {}
    for client in CLIENTS:
        engine = engine_for(client, server, "openai/gpt-4o")
        costs[client] = run_one(taxonomy, engine).provenance.cost
        prices[client] = engine.prices()
        schema[client] = engine.sends_schema()
    assert costs["litellm"] is not None and costs["openai"] == pytest.approx(costs["litellm"])
    assert prices["openai"] == prices["litellm"] and schema["openai"] == schema["litellm"] is True
    # A model without a price has an unknown cost, not 0, through both.
    unpriced = {client: run_one(taxonomy, engine_for(client, server)).provenance.cost for client in CLIENTS}
    assert unpriced == {"litellm": None, "openai": None}


def test_a_bare_openai_model_goes_to_openai_base_url(taxonomy, server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0000000000")
    monkeypatch.setenv("OPENAI_BASE_URL", server.api_base)  # where litellm and the SDK both send "gpt-4o"
    server.script = lambda request: ANSWER
    for client in CLIENTS:
        engine = LLMEngine("gpt-4o", client=client, backoff_seconds=0)
        engine.check_ready()
        assert isinstance(run_one(taxonomy, engine), Candidate)
    assert server.requests[0]["body"] == server.requests[1]["body"]
    assert server.requests[0]["body"]["model"] == "gpt-4o"


@pytest.mark.parametrize("status, headers", [
    (400, {}), (401, {}), (403, {}), (404, {}), (413, {}), (422, {}), (429, {"retry-after": "0.25"}),
    (429, {}), (500, {}), (502, {}), (503, {}), (504, {}),
])
def test_the_same_http_answer_gets_the_same_reason(server, status, headers):
    server.script = lambda request: Reply(status=status, error="scripted refusal", headers=headers)
    outcomes = {}
    for client in CLIENTS:
        engine = engine_for(client, server, transient_attempts=1)
        refusals = (ProviderError, TransientProviderError, AuthenticationRefused, ProviderMisconfigured)
        with pytest.raises(refusals) as caught:
            asyncio.run(engine._complete_with_retries(engine.request([{"role": "user", "content": "hi"}], 0, None,
                                                                     "x")))
        error = caught.value
        outcomes[client] = (type(error).__name__, getattr(error, "status", None), getattr(error, "retry_after", None))
        assert "scripted refusal" in str(error)
    assert outcomes["openai"] == outcomes["litellm"]


def test_timeouts_and_refused_connections_are_transient(server):
    server.script = lambda request: (time.sleep(1.5), ANSWER)[1]
    for client in CLIENTS:
        engine = engine_for(client, server, transient_attempts=1, timeout=0.3)
        with pytest.raises(TransientProviderError):
            asyncio.run(engine._complete_once(engine.request([{"role": "user", "content": "hi"}], 0, None, "x")))
        closed = LLMEngine("openai/scripted", api_base="http://127.0.0.1:9/v1", client=client)
        closed.check_ready()
        with pytest.raises(TransientProviderError):
            asyncio.run(closed._complete_once(closed.request([{"role": "user", "content": "hi"}], 0, None, "x")))


def test_an_answer_that_is_not_json_is_retried(taxonomy, server):
    """A 200 whose body is not JSON (a broken proxy) is retried, as litellm does for openai/ models."""
    server.script = lambda request: ANSWER
    original = server.httpd.RequestHandlerClass.do_POST
    broken: list[bool] = []

    def broken_once(handler):
        if broken:
            return original(handler)
        broken.append(True)
        handler.rfile.read(int(handler.headers.get("content-length", 0)))
        data = b"<html>502 Bad Gateway</html>"
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    server.httpd.RequestHandlerClass.do_POST = broken_once
    record = run_one(taxonomy, engine_for("openai", server))
    assert isinstance(record, Candidate) and broken and len(server.requests) == 1  # the retry's


def test_a_cached_answer_from_one_client_is_a_hit_for_the_other(taxonomy, server, tmp_path):
    from injector.engines.cache import RequestCache

    server.script = lambda request: ANSWER
    cache_path = tmp_path / "cache.sqlite"
    first = run_one(taxonomy, engine_for("litellm", server, cache=RequestCache(cache_path)))
    second = run_one(taxonomy, engine_for("openai", server, cache=RequestCache(cache_path)))
    assert isinstance(first, Candidate) and isinstance(second, Candidate)
    assert len(server.requests) == 1 and second.provenance.details.get("cached") is True
    third = run_one(taxonomy, engine_for("openai", server, cache=RequestCache(tmp_path / "other.sqlite")))
    run_one(taxonomy, engine_for("litellm", server, cache=RequestCache(tmp_path / "other.sqlite")))
    assert isinstance(third, Candidate) and len(server.requests) == 2  # and the other way round


def test_auto_picks_the_openai_sdk_only_where_it_sends_the_same(monkeypatch):
    monkeypatch.delenv("INJECT_CLIENT", raising=False)
    assert choose_client("openai/qwen", "http://127.0.0.1:8000/v1", None) == "openai"
    assert choose_client("openai/qwen", None, "auto") == "openai"
    assert choose_client("hosted_vllm/qwen", "http://127.0.0.1:8000/v1", None) == "openai"
    assert choose_client("hosted_vllm/qwen", None, None) == "litellm"  # its api base comes from litellm's env
    assert choose_client("gpt-4o", None, None) == "openai"
    for model in ("anthropic/claude-3-5-sonnet-20240620", "ollama_chat/llama3", "o3-mini", "openai/o1",
                  "gpt-5-mini", "text-embedding-3-small"):
        assert choose_client(model, None, None) == "litellm", model
        assert not serves(model, None)
    assert choose_client("openai/qwen", "http://x/v1", "litellm") == "litellm"
    monkeypatch.setenv("INJECT_CLIENT", "litellm")
    assert choose_client("openai/qwen", "http://x/v1", None) == "litellm"
    assert choose_client("openai/qwen", "http://x/v1", "openai") == "openai"  # the option wins over the variable
    monkeypatch.setenv("INJECT_CLIENT", "curl")
    with pytest.raises(UserError, match="INJECT_CLIENT"):
        choose_client("openai/qwen", None, None)
    with pytest.raises(UserError, match="--client litellm"):
        choose_client("anthropic/claude-3-5-sonnet-20240620", None, "openai")


def test_the_price_table_is_litellms_and_read_without_importing_it():
    code = ("import sys; from injector.engines.openai_client import model_entry, price_table; "
            "assert len(price_table()) > 100; e = model_entry('openai/gpt-4o'); "
            "assert e['input_cost_per_token'] > 0 and e['litellm_provider'] == 'openai'; "
            "print('litellm' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
    assert model_entry("openai/not-a-listed-model") is None and price_table() is price_table()


def test_missing_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        LLMEngine("gpt-4o", client="openai").check_ready()
    with pytest.raises(UserError, match="OPENAI_API_KEY"):
        LLMEngine("gpt-4o", client="litellm").check_ready()


def test_inject_run_on_the_openai_path_never_imports_litellm(server, tmp_path):
    """The whole command through `--client openai` (the default for openai/ models): litellm stays unimported."""
    server.script = lambda request: ANSWER
    records = tmp_path / "in.jsonl"
    records.write_text(json.dumps({"id": "t", "question": TRAJECTORY.question, "steps": STEPS, "answer": "5"}) + "\n")
    code = ("import sys\nfrom injector.cli.commands import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as exit:\n    assert not exit.code, exit.code\n"
            "print('litellm imported:', 'litellm' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code, "run", "--category", "counterfactual", "--input",
                             str(records), "--input-format", "trajectories", "--model", "openai/scripted",
                             "--api-base", server.api_base, "--no-cache", "--out", str(tmp_path / "run")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "litellm imported: False" in result.stdout
    assert len(server.requests) == 1


@pytest.mark.parametrize("model", ["gpt-4o", "openai/gpt-4o", "gpt-4o-mini", "gpt-4.1"])
def test_cost_with_cached_prompt_tokens_is_litellms(model):
    from injector.engines.llm import import_litellm
    from injector.engines.openai_client import OpenAIClient

    litellm = import_litellm()
    for usage in ({"prompt_tokens": 1000, "completion_tokens": 100},
                  {"prompt_tokens": 1000, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 400}}):
        response = litellm.ModelResponse(model=model.split("/")[-1], usage=usage,
                                         choices=[{"message": {"role": "assistant", "content": "x"}}])
        expected = litellm.completion_cost(completion_response=response, model=model)
        assert OpenAIClient(model, None).cost(usage) == pytest.approx(expected)


def test_a_run_directory_continues_under_the_other_client(server, tmp_path):
    """The client is not part of the run's configuration: a run made through litellm resumes through the SDK."""
    from click.testing import CliRunner

    from injector.cli.commands import main

    server.script = lambda request: ANSWER
    records = tmp_path / "in.jsonl"
    records.write_text("".join(json.dumps({"id": f"t{k}", "question": f"{TRAJECTORY.question} ({k})", "steps": STEPS,
                                           "answer": "5"}) + "\n" for k in range(3)))
    args = ["run", "--category", "counterfactual", "--input", str(records), "--input-format", "trajectories",
            "--model", "openai/scripted", "--api-base", server.api_base, "--no-cache", "--out", str(tmp_path / "run")]
    first = CliRunner().invoke(main, [*args, "--client", "litellm", "--limit", "2"])
    assert first.exit_code == 0, first.output
    second = CliRunner().invoke(main, [*args, "--client", "openai"])
    assert second.exit_code == 0, second.output
    assert len(server.requests) == 3  # 2 through litellm, then only the third through the SDK
    assert len((tmp_path / "run" / "candidates.jsonl").read_text().splitlines()) == 3
