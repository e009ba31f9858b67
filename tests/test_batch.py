"""`inject run --batch` against a stub of OpenAI's batch API: chunks within limits, failed and expired lines (and
only those) resubmitted, re-asks in the next round, adoption after a kill between create and record, --no-wait,
status and cancel, batch prices."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from batch_server import BatchServer
from click.testing import CliRunner

from injector import RunSpec, Taxonomy, load_trajectories, run
from injector.cli.commands import main
from injector.engines import BatchEngine
from injector.engines.batch import BATCHES_FILE, read_batch_log

QUESTION = "What is $2 + 3$?"
STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
GOOD = {"question": None, "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.", "error": True}],
        "reason": "2 + 3 is 5, not 6."}
UNFLAGGED = dict(GOOD, edits=[{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$."}])  # fails validation


def write_input(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "input.jsonl"
    rows = [{"id": f"t{k}", "question": QUESTION, "steps": [f"Let $x = 2$ (item {k}).", *STEPS[1:]], "answer": "5"}
            for k in range(count)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def always_good(body: dict) -> str:
    return json.dumps(GOOD)


def first_submission_fails(share: int):
    """Lines fail (a 500) on their first submission for `share` in 100 of the custom ids; a resubmission succeeds."""
    def fails(custom_id: str, body: dict, submissions: int) -> bool:
        return submissions == 1 and int(custom_id[:8], 16) % 100 < share

    return fails


@pytest.fixture
def stub():
    servers: list[BatchServer] = []

    def start(answer=always_good, **options) -> BatchServer:
        servers.append(BatchServer(answer, **options).start())
        return servers[-1]

    yield start
    for server in servers:
        server.stop()


def run_cli(server: BatchServer, input_file: Path, out: Path, *extra: str):
    args = ["run", "--category", "counterfactual", "--input", str(input_file), "--model", "openai/scripted",
            "--api-base", server.api_base, "--out", str(out), "--batch", "--batch-poll-seconds", "0",
            "--price-in", "1", "--price-out", "2", *extra]
    return CliRunner().invoke(main, args, catch_exceptions=False)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_thousand_units_over_several_batches_with_failed_lines_and_an_expired_batch(stub, tmp_path):
    server = stub(fails=first_submission_fails(3), expire={1})
    input_file = write_input(tmp_path, 1000)
    out = tmp_path / "run"
    result = run_cli(server, input_file, out, "--batch-max-requests", "400", "--concurrency", "1000")
    assert result.exit_code == 0, result.output
    candidates = read_jsonl(out / "candidates.jsonl")
    assert sorted(c["id"] for c in candidates) == sorted(f"t{k}::counterfactual::0" for k in range(1000))
    assert read_jsonl(out / "rejects.jsonl") == []
    # The first round: three batches (400, 400, 200); the second batch expired with half its lines unanswered.
    first_round = [batch for batch in server.order[:3]]
    sizes = Counter(batch for batch, _ in server.submitted)
    assert [sizes[b] for b in first_round] == [400, 400, 200]
    assert server.batches[server.order[1]]["status"] == "expired"
    # Resubmitted: exactly the failed and the expired lines, each once more, and nothing else.
    times = Counter(custom_id for _, custom_id in server.submitted)
    resubmitted = {custom_id for custom_id, n in times.items() if n > 1}
    assert resubmitted == set(server.failed_lines) and len(server.failed_lines) == len(resubmitted)
    # The expired half, and about 3 % of the other 800 (binomial: 24 ± 5; the custom ids, request hashes, vary from run to run)
    assert 200 + 5 <= len(resubmitted) <= 200 + 60
    assert max(times.values()) == 2 and len(times) == 1000
    # Within limits, and each batch is recorded with the run and its chunk as metadata.
    assert all(n <= 400 for n in sizes.values())
    log = read_batch_log(out)
    assert set(log.submitted) == set(server.batches)
    for batch_id, batch in server.batches.items():
        assert batch["metadata"] == {"inject_run": "run", "inject_chunk": log.submitted[batch_id]["chunk"]}
    by_batch = Counter(c["provenance"]["batch"] for c in candidates)
    assert sum(by_batch.values()) == 1000 and len(by_batch) == len(server.batches)
    assert candidates[0]["provenance"]["cost"] == pytest.approx((100 * 1 + 50 * 2) / 1e6)


def test_reasks_with_validation_feedback_go_into_the_next_round(stub, tmp_path):
    def answer(body: dict) -> str:
        feedback = len(body["messages"]) > 2
        item = int(body["messages"][1]["content"].split("(item ")[1].split(")")[0])
        return json.dumps(GOOD if feedback or item % 3 else UNFLAGGED)

    server = stub(answer=answer)
    input_file = write_input(tmp_path, 14)
    out = tmp_path / "run"
    assert run_cli(server, input_file, out).exit_code == 0
    candidates = read_jsonl(out / "candidates.jsonl")
    assert len(candidates) == 14 and read_jsonl(out / "rejects.jsonl") == []
    reasked = [c for c in candidates if len(c["provenance"]["attempts"]) == 2]
    assert reasked and all(c["provenance"]["attempts"][0] == {"codes": ["no_error_steps"]} for c in reasked)
    assert len(server.order) == 2  # one round of first asks, one of re-asks
    second = [custom_id for batch, custom_id in server.submitted if batch == server.order[1]]
    assert len(second) == len(reasked)
    assert {c["provenance"]["batch"] for c in reasked} == {server.order[1]}


@pytest.mark.parametrize("resume_max_requests", [12, 10], ids=["same-chunks", "other-chunks"])
def test_a_kill_between_create_and_record_submits_nothing_twice(stub, tmp_path, monkeypatch, resume_max_requests):
    """The write-ahead intent: the batch a kill left unrecorded is found by its input file and adopted, also when
    the resume would cut the waiting requests otherwise (--batch-max-requests changed)."""
    server = stub()
    input_file = write_input(tmp_path, 30)
    out = tmp_path / "run"
    taxonomy = Taxonomy.load()
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["counterfactual"]), out=out, concurrency=100)

    def engine(max_requests: int) -> BatchEngine:
        return BatchEngine("openai/scripted", api_base=server.api_base, run_dir=out, max_requests=max_requests,
                           poll_seconds=0, backoff_seconds=0, price_in=0, price_out=0)

    real_record = BatchEngine._record

    def killed_after_the_second_create(self, record):
        if record.get("event") == "submitted" and len(self._log_now().submitted) == 1:
            raise KeyboardInterrupt  # what a kill leaves: the provider has the batch, the run directory does not
        real_record(self, record)

    monkeypatch.setattr(BatchEngine, "_record", killed_after_the_second_create)
    with pytest.raises(KeyboardInterrupt):
        run(load_trajectories(input_file), spec, engine(12))
    assert server.creates == 2 and len(read_batch_log(out).submitted) == 1
    monkeypatch.setattr(BatchEngine, "_record", real_record)
    result = run(load_trajectories(input_file), spec, engine(resume_max_requests))
    assert result.progress.accepted == 30
    assert server.creates == 3  # 12 + 12 + 6: the second was adopted, not created again
    times = Counter(custom_id for _, custom_id in server.submitted)
    assert len(times) == 30 and max(times.values()) == 1  # before the intent, other chunks sent 12 twice
    log = read_batch_log(out)
    assert set(server.batches) == set(log.submitted)
    assert [record["adopted"] for record in log.submitted.values()] == [False, True, False]


def test_no_wait_submits_and_exits_and_the_same_command_collects(stub, tmp_path):
    server = stub()
    input_file = write_input(tmp_path, 10)
    out = tmp_path / "run"
    first = run_cli(server, input_file, out, "--no-wait", "--batch-max-requests", "6")
    assert first.exit_code == 0, first.output
    assert "16 requests" not in first.output and "10 requests in 2 batches are with the provider" in first.output
    assert read_jsonl(out / "candidates.jsonl") == []
    assert json.loads((out / "manifest.json").read_text())["status"] == "batches_pending"
    status = CliRunner().invoke(main, ["status", str(out)])
    assert status.exit_code == 0 and "2 batches: 2 validating" in status.output
    again = run_cli(server, input_file, out, "--no-wait", "--batch-max-requests", "6")  # polled once: in progress
    assert again.exit_code == 0 and read_jsonl(out / "candidates.jsonl") == []
    assert "2 batches: 2 in_progress" in CliRunner().invoke(main, ["status", str(out)]).output
    done = run_cli(server, input_file, out, "--no-wait", "--batch-max-requests", "6")
    assert done.exit_code == 0, done.output
    assert len(read_jsonl(out / "candidates.jsonl")) == 10 and server.creates == 2
    assert json.loads((out / "manifest.json").read_text())["status"] == "finished"
    assert "2 batches: 2 completed" in CliRunner().invoke(main, ["status", str(out)]).output


def test_batch_cancel_cancels_the_unfinished_batches(stub, tmp_path):
    server = stub()
    input_file = write_input(tmp_path, 8)
    out = tmp_path / "run"
    assert run_cli(server, input_file, out, "--no-wait", "--batch-max-requests", "5").exit_code == 0
    cancelled = CliRunner().invoke(main, ["batch", "cancel", str(out), "--model", "openai/scripted",
                                          "--api-base", server.api_base])
    assert cancelled.exit_code == 0, cancelled.output
    assert cancelled.stdout.splitlines() == ["batch_0\tcancelled", "batch_1\tcancelled"]
    assert {b["status"] for b in server.batches.values()} == {"cancelled"}
    assert "2 batches: 2 cancelled" in CliRunner().invoke(main, ["status", str(out)]).output
    # A later run resubmits what the cancelled batches never answered.
    assert run_cli(server, input_file, out).exit_code == 0
    assert len(read_jsonl(out / "candidates.jsonl")) == 8 and server.creates == 3  # one more, of all 8


def test_batch_prices_come_from_litellm_when_it_has_them(tmp_path):
    engine = BatchEngine("gpt-4o-mini", run_dir=tmp_path)
    online = BatchEngine("gpt-4o-mini", run_dir=tmp_path)
    from injector.engines import LLMEngine

    price_in, price_out = engine.prices() or (None, None)
    assert price_in is not None and price_out is not None
    assert (price_in, price_out) < LLMEngine("gpt-4o-mini").prices()  # batch prices: cheaper
    assert BatchEngine("openai/unknown-model", run_dir=tmp_path).prices() is None
    assert BatchEngine("openai/unknown-model", run_dir=tmp_path, price_in=1, price_out=2).prices() == (1e-6, 2e-6)
    assert online.run_name == tmp_path.name


def test_batch_needs_out_and_one_provider(tmp_path):
    input_file = write_input(tmp_path, 2)
    base = ["run", "--category", "counterfactual", "--input", str(input_file), "--model", "openai/x", "--batch"]
    result = CliRunner().invoke(main, base)
    assert result.exit_code == 2 and "--batch needs --out" in result.output
    result = CliRunner().invoke(main, [*base, "--out", str(tmp_path / "r"), "--api-base", "http://127.0.0.1:1/v1",
                                       "--api-base", "http://127.0.0.1:2/v1"])
    assert result.exit_code == 2 and "one provider's batch API" in result.output
    result = CliRunner().invoke(main, [*base[:-1], "--no-wait", "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--no-wait goes with --batch" in result.output
    result = CliRunner().invoke(main, [*base[:5], "--model", "ollama_chat/llama3", "--batch", "--out",
                                       str(tmp_path / "r")])
    assert result.exit_code == 2 and "no batch API for 'ollama_chat'" in result.output


def test_the_batch_log_is_whole_lines_a_torn_one_is_skipped(tmp_path):
    (tmp_path / BATCHES_FILE).write_text(json.dumps({"event": "submitted", "batch_id": "b1", "keys": ["k"],
                                                     "status": "validating"}) + "\n" + '{"event": "sta')
    log = read_batch_log(tmp_path)
    assert log.holder == {"k": "b1"} and log.status("b1") == "validating"


def _with_usage(usage):
    def rewrite(row: dict) -> dict:
        row["response"]["body"]["usage"] = usage
        return row
    return rewrite


@pytest.mark.parametrize("usage", [{"prompt_tokens": "lots", "completion_tokens": 5}, [1, 2], "x",
                                   {"prompt_tokens": float("nan")}])
def test_a_line_with_a_usage_that_is_no_number_still_answers_its_unit(stub, tmp_path, usage):
    # Was: _answer raised in int(...) after the entry left the waiting set, so its future never resolved (a hang).
    server = stub(rewrite=_with_usage(usage))
    out = tmp_path / "run"
    result = run_cli(server, write_input(tmp_path, 3), out)
    assert result.exit_code == 0, result.output
    assert len(read_jsonl(out / "candidates.jsonl")) == 3


def test_a_status_code_written_as_a_string_is_read_as_the_number(stub, tmp_path):
    def rewrite(row: dict) -> dict:
        row["response"]["status_code"] = "200"
        return row

    server = stub(rewrite=rewrite)
    out = tmp_path / "run"
    result = run_cli(server, write_input(tmp_path, 3), out)
    assert result.exit_code == 0, result.output
    assert server.creates == 1  # was: every line resubmitted as "status 200" until the attempts ran out
    assert len(read_jsonl(out / "candidates.jsonl")) == 3


@pytest.mark.parametrize("content", [{"a": 1}, ["x"], '{"edits": [' + "9" * 5000 + '], "reason": "x"}'])
def test_odd_answer_content_in_a_batch_line_is_a_reject_not_a_crash(stub, tmp_path, content):
    def rewrite(row: dict) -> dict:
        row["response"]["body"]["choices"][0]["message"]["content"] = content
        return row

    server = stub(rewrite=rewrite)
    out = tmp_path / "run"
    result = run_cli(server, write_input(tmp_path, 2), out)
    assert result.exit_code == 0, result.output
    rejects = read_jsonl(out / "rejects.jsonl")
    assert len(rejects) == 2 and not read_jsonl(out / "candidates.jsonl")


def test_litellm_does_not_download_a_finished_batch_again_behind_our_back(stub, tmp_path, monkeypatch):
    """litellm's success logging prices a finished batch by downloading and parsing its output in a background task;
    a line past our bounds (5,000 nested arrays) then failed there, unseen, and surfaced in pytest as an unraisable
    exception. Every retrieve asks litellm to skip that logging, and each output file is downloaded once: by us."""
    from injector.engines.model_info import import_litellm
    litellm = import_litellm()
    retrieves: list[dict] = []
    original = litellm.aretrieve_batch

    async def spy(**arguments):
        retrieves.append(arguments)
        return await original(**arguments)

    monkeypatch.setattr(litellm, "aretrieve_batch", spy)
    server = stub()
    result = run_cli(server, write_input(tmp_path, 3), tmp_path / "run")
    assert result.exit_code == 0, result.output
    assert retrieves and all(r.get("litellm_metadata") == {"batch_ignore_default_logging": True} for r in retrieves)
    outputs = [batch["output_file_id"] for batch in server.batches.values() if batch.get("output_file_id")]
    assert outputs and all(server.downloads[file_id] == 1 for file_id in outputs)
