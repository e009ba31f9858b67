"""Keys never reach the outputs: not from --api-base (userinfo, query), not from a provider error that echoes them."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from click.testing import CliRunner
from scripted_server import Reply

from injector.cli.commands import main
from injector.engines.llm import LLMEngine
from injector.util.redaction import REDACTED, RedactingFilter, public_url, redact, redact_command

ENV_KEY = "sk-envkey-0123456789abcdef"
URL_KEY = "qk-urlquery-SECRET-4242"  # not sk-like: caught only because it was registered from --api-base
USER_PASSWORD = "pw-userinfo-SECRET-777"
OTHER_TOKEN = "sk-proj-ZZZZyyyyXXXXwwww"  # a key-like token the provider mentions that we never had


@pytest.fixture
def input_file(tmp_path: Path) -> Path:
    path = tmp_path / "input.jsonl"
    row = {"id": "t0", "question": "What is $2 + 3$?", "steps": ["$2 + 3 = 5$.", "# Answer\n\n5"], "answer": "5"}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


def run_cli(api_base: str, input_file: Path, out: Path):
    args = ["run", "--category", "counterfactual", "--input", str(input_file), "--model", "openai/scripted",
            "--api-base", api_base, "--out", str(out), "--no-cache"]
    return CliRunner().invoke(main, args, env={"OPENAI_API_KEY": ENV_KEY}, catch_exceptions=False)


def everything_written(out: Path, result) -> str:
    return "\n".join([result.output, *(p.read_text() for p in sorted(out.iterdir()) if p.is_file())])


def test_provider_error_echoing_the_keys_is_redacted_in_rejects(scripted_server, input_file, tmp_path):
    api_base = f"{scripted_server.api_base}?api_key={URL_KEY}"
    scripted_server.script = lambda request: Reply(
        status=400, error=f"bad request for key {ENV_KEY} (query {URL_KEY}), also {OTHER_TOKEN}")
    out = tmp_path / "run"
    result = run_cli(api_base, input_file, out)
    assert result.exit_code == 0, result.output
    # The real value was used for the request: the query reached the server.
    assert URL_KEY in scripted_server.requests[0]["path"]
    reject = json.loads((out / "rejects.jsonl").read_text())
    assert reject["codes"] == ["provider_error"]
    prefix = {"litellm": "litellm.BadRequestError: OpenAIException - ", "openai": "BadRequestError: "}
    assert reject["messages"] == [
        f"{prefix[scripted_server.client]}bad request for key {REDACTED} (query {REDACTED}), also {REDACTED}"]
    written = everything_written(out, result)
    for secret in (ENV_KEY, URL_KEY, OTHER_TOKEN):
        assert secret not in written
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"][manifest["command"].index("--api-base") + 1] == scripted_server.api_base


def test_credentials_refused_with_the_key_echoed_is_redacted_on_stderr(scripted_server, input_file, tmp_path):
    scripted_server.script = lambda request: Reply(status=401, error=f"Incorrect API key provided: {ENV_KEY}")
    result = run_cli(scripted_server.api_base, input_file, tmp_path / "run")
    assert result.exit_code == 2
    assert "the provider refused the credentials" in result.output and f"provided: {REDACTED}" in result.output
    assert ENV_KEY not in result.output


def test_userinfo_and_query_of_the_api_base_are_never_recorded(scripted_server, input_file, tmp_path, monkeypatch):
    # httpx refuses userinfo next to the Authorization header, so every request fails (transiently): no waiting.
    monkeypatch.setattr(LLMEngine, "_retry_delay", lambda self, error, failures: 0)
    host = f"127.0.0.1:{scripted_server.port}"
    api_base = f"http://user:{USER_PASSWORD}@{host}/v1?api_key={URL_KEY}&x=1"
    out = tmp_path / "run"
    result = run_cli(api_base, input_file, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"][manifest["command"].index("--api-base") + 1] == f"http://{host}/v1"
    assert manifest["config"]["api_base_host"] == host
    if scripted_server.client == "openai":  # litellm refuses userinfo beside its key header: the run stops (exit 2)
        reject = json.loads((out / "rejects.jsonl").read_text())
        assert reject["provenance"]["api_base_host"] == host
    written = everything_written(out, result)
    for secret in (USER_PASSWORD, URL_KEY, ENV_KEY):
        assert secret not in written


def test_an_echoed_basic_authorization_of_the_api_bases_userinfo_is_redacted(scripted_server, input_file, tmp_path,
                                                                           monkeypatch):
    import base64

    monkeypatch.setattr(LLMEngine, "_retry_delay", lambda self, error, failures: 0)
    basic = base64.b64encode(f"user:{USER_PASSWORD}".encode()).decode()
    scripted_server.script = lambda request: Reply(
        status=401, error="refused: " + scripted_server.requests[-1]["headers"].get("Authorization", "none"))
    api_base = f"http://user:{USER_PASSWORD}@127.0.0.1:{scripted_server.port}/v1"
    out = tmp_path / "run"
    result = run_cli(api_base, input_file, out)
    assert result.exit_code == 2, result.output
    assert basic not in everything_written(out, result) and basic.rstrip("=") not in everything_written(out, result)
    if scripted_server.client == "litellm":
        # httpx refuses the userinfo beside litellm's key header before anything is sent: a setting to fix, said
        # once, not a fault retried as transient.
        assert scripted_server.requests == [] and "holds credentials (NAME:PASSWORD@ before the host)" in result.output
    else:
        assert f"refused: Basic {REDACTED}" in result.output


def test_redact_catches_every_form(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", ENV_KEY)
    monkeypatch.setenv("SORT_KEY", "name")  # too short to be a credential: left alone
    public_url(f"https://me:{USER_PASSWORD}@proxy.example/v1?token={URL_KEY}")  # registers both
    text = (f"key {ENV_KEY}; {USER_PASSWORD} / {URL_KEY}; https://a:b@host/x?api_key=zzz&n=1; "
            f"sk-ant-api03-abcdefghijk; Authorization=Bearer-xyz; by name")
    assert redact(text) == (f"key {REDACTED}; {REDACTED} / {REDACTED}; https://{REDACTED}@host/x?api_key="
                            f"{REDACTED}&n=1; {REDACTED}; Authorization={REDACTED}; by name")
    # LaTeX and ordinary messages pass unchanged.
    assert redact(r"step 3: $\frac{1}{2}$ is not 0.5x (sketch)") == r"step 3: $\frac{1}{2}$ is not 0.5x (sketch)"


def test_recorded_command_and_log_lines_are_redacted():
    command = ["inject", "run", "--api-base", f"http://u:{USER_PASSWORD}@h:8000/v1?k=1", "--model",
               "openai/x", f"--api-base=http://h/v1?api_key={URL_KEY}"]
    assert redact_command(command) == ["inject", "run", "--api-base", "http://h:8000/v1", "--model", "openai/x",
                                       "--api-base=http://h/v1"]
    record = logging.LogRecord("LiteLLM", logging.WARNING, __file__, 1, "retrying with %s", (OTHER_TOKEN,), None)
    assert RedactingFilter().filter(record) and record.getMessage() == f"retrying with {REDACTED}"


def test_a_user_name_beside_a_password_is_a_name_not_a_secret():
    """`http://user:PASSWORD@host` made "user" a plain-text secret for the rest of the process, so a later
    `--log-prompts` line read `"role": "[redacted]"` (it failed the suite when test_saved_config ran after this
    file). A user name alone, or as long as a key, is still the credential."""
    public_url(f"http://user:{USER_PASSWORD}@host/v1")
    assert redact('{"role": "user"} ' + USER_PASSWORD) == '{"role": "user"} ' + REDACTED
    token = "tok" + "x" * 20
    public_url(f"http://{token}@host/v1")
    assert redact(f"echoed {token}") == f"echoed {REDACTED}"
