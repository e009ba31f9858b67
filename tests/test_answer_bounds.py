"""Every answer has a deadline (connect, first byte, whole body) and a size cap, for every client: the openai SDK's
and litellm's (`inject run`, `verify` and `eval --judge` ask through them), the PRM server's and the batch file
downloads. A server that trickles its body is a transient failure, never a hang; an oversize answer is refused."""
from __future__ import annotations

import asyncio
import json
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
from batch_server import BatchServer
from scripted_server import LoopbackServer, Reply, ScriptedServer, write_slowly

from injector import LLMEngine, Taxonomy, Trajectory, inject_one
from injector.engines import BatchEngine
from injector.engines.base import TransientProviderError
from injector.evaluate.metrics import EvalItem
from injector.evaluate.judge import JOURNAL_FILE, LLMJudge
from injector.evaluate.prm_server import PRMServer, PRMServerError
from injector.records.models import Rejection
from injector.util.errors import ProviderUnreachable

STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
TRAJECTORY = Trajectory(id="t", question="What is $2 + 3$?", steps=STEPS, answer="5")
GOOD = json.dumps({"question": None, "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.",
                                                "error": True}], "reason": "2 + 3 is 5, not 6."})
TRICKLE = 0.05  # seconds a byte: a ~400-byte answer takes 20 s, each byte well within any per-read timeout


def run_one(engine: LLMEngine) -> Any:
    taxonomy = Taxonomy.load()
    return asyncio.run(inject_one(taxonomy, taxonomy.category("counterfactual"), TRAJECTORY, engine))


def test_a_trickling_chat_answer_is_a_transient_failure_not_a_wait(scripted_server):
    scripted_server.script = lambda request: Reply(content=GOOD, drip=TRICKLE)
    engine = LLMEngine("openai/scripted", api_base=scripted_server.api_base, timeout=1.0, transient_attempts=2,
                       backoff_seconds=0)
    engine.check_ready()
    record = run_one(engine)
    assert isinstance(record, Rejection) and record.codes == ["transient_failure"]
    assert len(scripted_server.requests) == 2  # tried again (our retries), then rejected
    assert "1 s" in record.messages[0] or "timed out" in record.messages[0].lower()


class PoolingStub(LoopbackServer):
    """vLLM's pooling endpoint answering one score per step, its body sent `drip` seconds a byte, `pad` bytes
    of spaces added inside the JSON."""

    def __init__(self, drip: float = 0.0, pad: int = 0, declare_length: bool = True):
        self.requests = 0
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                stub.requests += 1
                steps = body["messages"][-1]["content"].count("<extra_0>")
                data = json.dumps({"data": [{"index": 0, "data": [[0.2, 0.8]] * steps}]}).encode()
                data = data[:-1] + b" " * pad + data[-1:]
                self.send_response(200)
                self.send_header("content-type", "application/json")
                if declare_length:  # else the body runs to the end of the connection (HTTP/1.0)
                    self.send_header("content-length", str(len(data)))
                self.end_headers()
                write_slowly(self.wfile, data, drip)

        self._serve(Handler)
        self.url = f"http://127.0.0.1:{self.port}"


ITEM = EvalItem(id="a", category="counterfactual", kind="ERROR", steps=("one", "two"), question="q")


def test_a_trickling_prm_server_is_unreachable_not_a_wait(tmp_path):
    server = PoolingStub(drip=TRICKLE).start()
    try:
        with pytest.raises(ProviderUnreachable, match="did not answer"):
            PRMServer(url=server.url, model="prm", timeout=1.0, backoff_seconds=0).score([ITEM], tmp_path)
        assert server.requests == 4
    finally:
        server.stop()


def test_a_trickling_batch_file_download_is_a_transient_failure_not_a_wait(tmp_path):
    server = BatchServer(lambda body: GOOD).start()
    server.drip = TRICKLE
    try:
        taxonomy = Taxonomy.load()
        engine = BatchEngine("openai/scripted", api_base=server.api_base, run_dir=tmp_path / "run", poll_seconds=0,
                             backoff_seconds=0, timeout=1.0, transient_attempts=2, price_in=0, price_out=0)
        (tmp_path / "run").mkdir()
        engine.check_ready()

        async def one() -> Any:
            task = asyncio.ensure_future(inject_one(taxonomy, taxonomy.category("counterfactual"), TRAJECTORY,
                                                    engine))
            await asyncio.sleep(0)
            await engine.flush()
            return await task

        record = asyncio.run(one())
        assert isinstance(record, Rejection) and record.codes == ["transient_failure"], record
    finally:
        server.stop()


def test_an_answer_past_the_cap_is_refused_with_its_own_code(scripted_server):
    scripted_server.script = lambda request: Reply(content="x" * 200_000)
    engine = LLMEngine("openai/scripted", api_base=scripted_server.api_base, max_answer_bytes=100_000,
                       backoff_seconds=0)
    engine.check_ready()
    record = run_one(engine)
    assert isinstance(record, Rejection) and record.codes == ["answer_too_large"] and record.raw is None
    assert "100,000 bytes" in record.messages[0]
    assert len(scripted_server.requests) == 1  # refused for good, not retried


@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length", "until-close"])
def test_an_answer_past_the_cap_is_not_read_whole(scripted_server, declare_length):
    """litellm's client too hangs up at the cap (before: it read all 32 MB, then refused the text)."""
    size = 32 * 1024 * 1024
    scripted_server.script = lambda request: Reply(content=GOOD, pad=size, declare_length=declare_length)
    engine = LLMEngine("openai/scripted", api_base=scripted_server.api_base, max_answer_bytes=100_000,
                       backoff_seconds=0)
    engine.check_ready()
    record = run_one(engine)
    assert isinstance(record, Rejection) and record.codes == ["answer_too_large"] and record.raw is None
    [(written, body)] = scripted_server.replies_sent(1)
    assert body > size and written < body // 2  # the socket buffers hold a few MB at most: the client hung up


def test_a_long_answer_is_kept_truncated_with_a_marker(scripted_server):
    scripted_server.script = lambda request: Reply(content="y" * 300_000)
    engine = LLMEngine("openai/scripted", api_base=scripted_server.api_base, backoff_seconds=0)
    engine.check_ready()
    record = run_one(engine)
    assert isinstance(record, Rejection) and record.raw is not None
    assert len(record.raw) < 70_000 and record.raw.startswith("y" * 1000)
    assert "truncated" in record.raw and "234,464 more characters" in record.raw


@pytest.mark.parametrize("declare_length", [True, False])
def test_a_prm_server_answer_past_the_cap_is_refused_unread(tmp_path, declare_length):
    server = PoolingStub(pad=300_000, declare_length=declare_length).start()
    try:
        with pytest.raises(PRMServerError, match="more than the 100,000 bytes"):
            PRMServer(url=server.url, model="prm", max_answer_bytes=100_000, backoff_seconds=0).score([ITEM],
                                                                                                    tmp_path)
        assert server.requests == 1
    finally:
        server.stop()


def test_a_judges_journal_keeps_no_huge_answer(scripted_server, tmp_path):
    scripted_server.script = lambda request: Reply(content="z" * 300_000)
    engine = LLMEngine("openai/scripted", api_base=scripted_server.api_base, backoff_seconds=0)
    from injector.util.errors import UserError

    with pytest.raises(UserError, match="never answered in the format"):  # nothing was measured: said, not exit 0
        LLMJudge(engine=engine).score([ITEM], tmp_path)
    assert (tmp_path / JOURNAL_FILE).stat().st_size < 200_000  # two answers of 300 KB, each kept truncated


def test_a_trickling_server_behind_the_router_is_a_transient_failure_not_a_wait():
    from injector.engines.deployments import Deployment, DeploymentSet
    from injector.engines.router import RouterEngine

    server = ScriptedServer().start()  # the Router is litellm's whatever the client: once is enough
    try:
        server.script = lambda request: Reply(content=GOOD, drip=TRICKLE)
        deployments = DeploymentSet([Deployment(model="openai/scripted", api_base=server.api_base)])
        engine = RouterEngine(deployments, model="scripted", timeout=1.0, transient_attempts=2, backoff_seconds=0)
        record = run_one(engine)
        assert isinstance(record, Rejection) and record.codes == ["transient_failure"]
    finally:
        server.stop()


def test_the_cap_is_a_flag_of_run_and_eval(scripted_server, tmp_path):
    """`--max-answer-bytes` reaches the chat client of `inject run` and the PRM server client of `inject eval`."""
    from click.testing import CliRunner

    from injector.cli.commands import main

    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps({"id": "t", "question": TRAJECTORY.question, "steps": STEPS, "answer": "5"}) + "\n")
    scripted_server.script = lambda request: Reply(content="x" * 200_000)
    run = CliRunner().invoke(main, ["run", "--category", "counterfactual", "--input", str(source), "--model",
                                    "openai/scripted", "--api-base", scripted_server.api_base, "--out",
                                    str(tmp_path / "run"), "--max-answer-bytes", "100000"], catch_exceptions=False)
    assert run.exit_code == 0, run.output
    rejects = [json.loads(line) for line in (tmp_path / "run" / "rejects.jsonl").read_text().splitlines()]
    assert [r["codes"] for r in rejects] == [["answer_too_large"]]
    split = tmp_path / "split.jsonl"
    split.write_text(json.dumps({"id": "a", "category": "counterfactual", "modified_process": ["one", "two"],
                                 "error_steps": [2]}) + "\n")
    server = PoolingStub(pad=300_000).start()
    try:
        args = ["eval", str(split), "--prm-server", server.url, "--prm-model", "prm", "--out", str(tmp_path / "r"),
                "--no-cache"]
        capped = CliRunner().invoke(main, [*args, "--max-answer-bytes", "100000"], catch_exceptions=False)
        assert capped.exit_code != 0 and "more than the 100,000 bytes" in capped.output
        fits = CliRunner().invoke(main, [*args, "--max-answer-bytes", "1000000", "--out", str(tmp_path / "r2")],
                                  catch_exceptions=False)
        assert fits.exit_code == 0, fits.output
    finally:
        server.stop()
