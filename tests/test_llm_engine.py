"""The LLM engine over real HTTP: transient faults retried (Retry-After honoured), then given up as a reject."""
from __future__ import annotations

import asyncio
import json

import pytest
from scripted_server import Reply

from injector import LLMEngine, Taxonomy, Trajectory, inject_one
from injector.model.provenance import Attempt
from injector.records.models import Candidate, Rejection

STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
TRAJECTORY = Trajectory(id="t", question="What is $2 + 3$?", steps=STEPS, answer="5")
ANSWER = {"question": None, "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.", "error": True}],
          "reason": "2 + 3 is 5, not 6."}


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return Taxonomy.load()


def inject(taxonomy, server, **engine_options):
    engine = LLMEngine("openai/scripted", api_base=server.api_base, backoff_seconds=0, **engine_options)
    engine.check_ready()
    return asyncio.run(inject_one(taxonomy, taxonomy.category("counterfactual"), TRAJECTORY, engine))


def test_transient_faults_are_retried(taxonomy, scripted_server):
    scripted_server.reply_in_order([Reply(status=503), Reply(status=429, headers={"Retry-After": "0"}),
                                    Reply(status=500), json.dumps(ANSWER)])
    record = inject(taxonomy, scripted_server)
    assert isinstance(record, Candidate), record
    assert len(scripted_server.requests) == 4
    assert record.provenance.attempts == [Attempt(codes=[])]  # transient retries are not attempts


def test_transient_faults_used_up_are_a_reject(taxonomy, scripted_server):
    scripted_server.script = lambda request: Reply(status=502, error="bad gateway")
    record = inject(taxonomy, scripted_server, transient_attempts=3)
    assert isinstance(record, Rejection)
    assert record.codes == ["transient_failure"] and record.raw is None
    assert len(scripted_server.requests) == 3


def test_context_window_exceeded_is_a_provider_error(taxonomy, scripted_server):
    scripted_server.script = lambda request: Reply(
        status=400, error="This model's maximum context length is 8192 tokens. However, your messages resulted in "
                          "9000 tokens. Please reduce the length of the messages.")
    record = inject(taxonomy, scripted_server)
    assert isinstance(record, Rejection) and record.codes == ["provider_error"]
    assert "maximum context length" in record.messages[0]
    assert len(scripted_server.requests) == 1


def test_api_base_without_key_sends_a_placeholder(taxonomy, scripted_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    scripted_server.script = lambda request: json.dumps(ANSWER)
    assert isinstance(inject(taxonomy, scripted_server), Candidate)
    headers = {key.lower(): value for key, value in scripted_server.requests[0]["headers"].items()}
    assert headers["authorization"] == "Bearer sk-no-key-needed"
