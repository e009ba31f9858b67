"""`inject eval --judge` through litellm against the scripted OpenAI-compatible server, and `--prm-server` against a
scripted server that answers vLLM's pooling endpoint the way vLLM 0.33 does."""
from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.cli.commands import main
from injector.evaluate.judge import read_step_verdicts
from injector.evaluate.prm_server import pooling_url, step_scores_of


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def split(tmp_path) -> Path:
    """Three error solutions and one control; each question names its solution, so a script can tell them apart."""
    rows = [("a::circular_logic::0", "circular_logic", 3, [2, 3]), ("b::redundancy::0", "redundancy", 2, [2]),
            ("c::confidence::0", "confidence", 2, [1]), ("a::correct", "correct", 3, [])]
    path = tmp_path / "split.jsonl"
    path.write_text("".join(json.dumps({"id": i, "category": c, "modified_question": f"question {i}",
                                        "modified_process": [f"step {k} of {i}" for k in range(1, n + 1)],
                                        "error_steps": e}) + "\n" for i, c, n, e in rows))
    return path


def verdicts(*correct: bool) -> str:
    return json.dumps({"steps": [{"step": k, "correct": v} for k, v in enumerate(correct, 1)]})


def item_of(request: dict) -> str:
    user = request["messages"][1]["content"]
    return user.split("question ", 1)[1].split("\n", 1)[0]


def test_read_verdicts_covers_every_step_once():
    assert read_step_verdicts(verdicts(True, False), 2) == ([True, False], None)
    assert read_step_verdicts("```json\n" + verdicts(True, False) + "\n```", 2) == ([True, False], None)
    assert read_step_verdicts(verdicts(True), 2) == (None, "No verdict for step(s) 2.")
    assert read_step_verdicts(verdicts(True, True, True), 2)[1] == "Step 3 does not exist: the solution has steps 1 to 2."
    assert read_step_verdicts('{"steps": [{"step": 1, "correct": "yes"}]}', 1)[1].startswith("Each entry")
    assert read_step_verdicts('{"steps": [{"step": 1, "correct": true}, {"step": 1, "correct": false}]}', 1)[1] \
        == "Step 1 has more than one verdict."
    assert read_step_verdicts("I think step 2 is wrong.", 2)[0] is None


def test_the_judge_re_asks_once_then_counts_the_answer_invalid(split, tmp_path, scripted_server):
    answers = {"a::circular_logic::0": [verdicts(True, False, False)],
               "b::redundancy::0": [verdicts(True), verdicts(True, False)],      # re-asked: the second covers all
               "c::confidence::0": ["Step 1 looks wrong to me.", verdicts(False)],  # unreadable, then short: invalid
               "a::correct": [verdicts(True, True, False)]}
    served = {key: list(value) for key, value in answers.items()}
    lock = threading.Lock()

    def script(request):
        with lock:
            return served[item_of(request)].pop(0)

    scripted_server.script = script
    out = tmp_path / "report"
    args = ["eval", str(split), "--judge", "openai/judge", "--api-base", scripted_server.api_base,
            "--price-in", "1", "--price-out", "2", "--out", str(out)]
    result = invoke(*args)
    assert result.exit_code == 0, result.output
    assert len(scripted_server.requests) == 6
    assert "judged 4 of 4 solutions" in result.output  # progress on stderr (every 10 s, and at the end)
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["validity"] == 0.75
    assert metrics["threshold"] == 0.5 and metrics["scorer"]["kind"] == "judge"
    # Pooled over a and b (c invalid, left out): a T F F vs T F F, b T F vs T F: TP 2, TN 3: F1 = F1_neg = 1.
    overall = metrics["prmbench"]["overall"]
    assert (overall["n_steps"], overall["prmscore"], overall["n_invalid"]) == (5, 1.0, 1)
    assert metrics["prmbench"]["per_category"]["confidence"]["n_invalid"] == 1
    # ProcessBench: a, b right, c invalid -> wrong; the control's step 3 judged wrong -> wrong.
    assert (metrics["processbench"]["acc_error"], metrics["processbench"]["acc_correct"]) == (2 / 3, 0.0)
    # The re-ask carries the first answer and what was wrong with it.
    reask = next(r["body"]["messages"] for r in scripted_server.requests
                 if item_of(r["body"]) == "b::redundancy::0" and len(r["body"]["messages"]) == 4)
    assert reask[2] == {"role": "assistant", "content": verdicts(True)}
    assert reask[3]["content"].startswith("No verdict for step(s) 2. Answer again")
    first = scripted_server.requests[0]["body"]
    assert first["response_format"]["json_schema"]["name"] == "step_verdicts" and first["temperature"] == 0.0
    assert "<step_3>\nstep 3 of a::circular_logic::0\n</step_3>" in next(
        r["body"]["messages"][1]["content"] for r in scripted_server.requests
        if item_of(r["body"]) == "a::circular_logic::0")
    # 6 requests of 100 prompt and 50 completion tokens at $1 / $2 per million.
    assert metrics["cost"] == pytest.approx(6 * (100 * 1 + 50 * 2) / 1e6)
    predictions = {p["id"]: p for p in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
    assert predictions["c::confidence::0"]["valid"] is False
    assert predictions["c::confidence::0"]["judge_problem"] == "No verdict for step(s) 2."

    # The same command again continues from the saved answers: no request, even without the cache.
    before = len(scripted_server.requests)
    again = invoke(*args, "--no-cache")
    assert again.exit_code == 0, again.output
    assert len(scripted_server.requests) == before
    assert json.loads((out / "metrics.json").read_text())["prmbench"] == metrics["prmbench"]
    # Another judge into the same directory is refused.
    other = invoke(*args[:3], "openai/other", *args[4:])
    assert other.exit_code == 2 and "another judge configuration" in other.output


def test_the_judge_stops_at_max_cost_and_the_same_command_continues(split, tmp_path, scripted_server):
    scripted_server.script = lambda request: verdicts(*([True] * (3 if item_of(request).startswith("a") else 2)))
    out = tmp_path / "report"
    args = ["eval", str(split), "--judge", "openai/judge", "--api-base", scripted_server.api_base,
            "--price-in", "1000", "--price-out", "0", "--max-cost", "0.1", "--concurrency", "1", "--no-cache",
            "--out", str(out)]
    first = invoke(*args)  # each answer: 100 prompt tokens at $1000 per million = $0.1
    assert first.exit_code == 3 and "run the same command again" in first.output
    assert len(scripted_server.requests) == 1 and not (out / "metrics.json").exists()
    for expected in (2, 3, 4):
        result = invoke(*args)
        assert len(scripted_server.requests) == expected
    assert result.exit_code == 0, result.output
    assert json.loads((out / "metrics.json").read_text())["validity"] == 1.0


class PoolingServer:
    """Answers POST /pooling like vLLM: {"data": [{"index": 0, "object": "pooling", "data": [[p_neg, p_pos], ...]}]}
    with one row per separator in the assistant message; `scores` maps a question to its positive probabilities."""

    def __init__(self, scores: dict[str, list[float]], separator: str = "<extra_0>"):
        self.requests: list[dict] = []
        self.status = 200
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests.append({"path": self.path, "body": body})
                if self.path != "/pooling" or server.status != 200:
                    self.send_response(404 if self.path != "/pooling" else server.status)
                    self.end_headers()
                    return
                question = body["messages"][-2]["content"]
                pooled = body["messages"][-1]["content"].count(separator)
                positives = scores[question][:pooled]
                payload = {"id": "pool-1", "object": "list", "created": 0, "model": body["model"],
                           "data": [{"index": 0, "object": "pooling", "data": [[1 - p, p] for p in positives]}],
                           "usage": {"prompt_tokens": 10, "total_tokens": 10}}
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_pooling_answers_are_read_as_the_positive_probability():
    assert step_scores_of({"data": [{"data": [[0.9, 0.1], [0.25, 0.75]]}]}, 2) == [0.1, 0.75]
    assert step_scores_of({"data": [{"data": [[0.3], [0.8]]}]}, 2) == [0.3, 0.8]
    with pytest.raises(Exception, match="1 scores for 2 steps"):
        step_scores_of({"data": [{"data": [[0.9, 0.1]]}]}, 2)
    with pytest.raises(Exception, match="not a probability"):
        step_scores_of({"data": [{"data": [[-3.2, 4.1]]}]}, 1)
    assert pooling_url("http://h:8000/v1") == "http://h:8000/pooling" == pooling_url("http://h:8000/")


def test_a_prm_served_by_vllm(split, tmp_path):
    scores = {"question a::circular_logic::0": [0.9, 0.3, 0.2], "question b::redundancy::0": [0.8, 0.6],
              "question c::confidence::0": [0.1, 0.7], "question a::correct": [0.9, 0.8, 0.95]}
    server = PoolingServer(scores)
    try:
        out = tmp_path / "report"
        args = ["eval", str(split), "--prm-server", server.url + "/v1", "--prm-model", "Qwen/Qwen2.5-Math-PRM-7B",
                "--out", str(out)]
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        assert "scored 4 of 4 solutions" in result.output
        body = server.requests[0]["body"]
        assert server.requests[0]["path"] == "/pooling" and body["model"] == "Qwen/Qwen2.5-Math-PRM-7B"
        assert body["messages"][0]["role"] == "system" and "\\boxed{}" in body["messages"][0]["content"]
        assert any(r["body"]["messages"][2]["content"] == "step 1 of a::correct<extra_0>step 2 of a::correct"
                   "<extra_0>step 3 of a::correct<extra_0>" for r in server.requests)
        predictions = {p["id"]: p for p in map(json.loads, (out / "predictions.jsonl").read_text().splitlines())}
        assert predictions["b::redundancy::0"]["step_scores"] == [0.8, 0.6]
        metrics = json.loads((out / "metrics.json").read_text())
        # a: T F F vs T F F; b: T F vs T T (0.6 > 0.5); c: F T vs F T. TP 3, TN 3, FP 1, FN 0:
        # F1 6/7, F1_neg 6/7, PRMScore 6/7. ProcessBench: a right, b wrong (none), c right; control right.
        assert metrics["prmbench"]["overall"]["prmscore"] == pytest.approx(6 / 7, abs=1e-9)
        assert metrics["processbench"]["acc_error"] == pytest.approx(2 / 3, abs=1e-9)
        assert metrics["processbench"]["acc_correct"] == 1.0
        assert metrics["scorer"] == {"kind": "prm_server", "model": "Qwen/Qwen2.5-Math-PRM-7B",
                                     "server_host": server.url.split("//")[1], "step_separator": "<extra_0>"}
        # Answers are cached: the same command sends nothing again.
        before = len(server.requests)
        assert invoke(*args).exit_code == 0 and len(server.requests) == before
        # A wrong separator (the server pools at <extra_0>, none found): one line, exit 2.
        wrong = invoke(*args, "--step-separator", "<sep>", "--out", str(tmp_path / "wrong"))
        assert wrong.exit_code == 2
        # Solutions are scored concurrently: whichever comes back first is the one named.
        assert re.search(r"solution '[^']+': 0 scores for [23] steps: the model must be served with STEP pooling",
                         wrong.output), wrong.output
        server.status = 400
        refused = invoke(*args[:-1], str(tmp_path / "refused"), "--no-cache")
        assert refused.exit_code == 2 and "the PRM server refused the request (HTTP 400" in refused.output
    finally:
        server.stop()


def test_the_judge_prompt_snapshot_and_a_static_system_part():
    from snapshots import assert_snapshot

    from injector.evaluate.judge import judge_messages
    from injector.evaluate.metrics import ERROR, EvalItem

    def solution(question, steps):
        return EvalItem(id="x", category="c", kind=ERROR, steps=tuple(steps), question=question)

    first = judge_messages(solution("What is $2+3$?", ["We add: $2 + 3 = 5$.", "# Answer\n\n5"]))
    second = judge_messages(solution("Another {{ question }}", ["Only step."]))
    assert first[0] == second[0]  # the system part is the same bytes for every solution (cacheable prefix)
    assert "{{ question }}" in second[1]["content"]  # data is rendered as values, never as template source
    text = "".join(f"--- {m['role']} ---\n{m['content']}\n" for m in first)
    assert_snapshot(text, Path(__file__).parent / "snapshots" / "eval" / "judge_steps.txt", __file__)


def test_a_provider_outage_keeps_what_was_judged_and_the_same_call_continues(split, tmp_path, scripted_server):
    from scripted_server import Reply

    from injector.engines.llm import LLMEngine
    from injector.util.errors import ProviderUnreachable
    from injector.evaluate import EvalRequest, evaluate
    from injector.evaluate.judge import LLMJudge

    down = {"c::confidence::0"}
    scripted_server.script = lambda request: Reply(status=503) if item_of(request) in down else verdicts(
        *([True] * (3 if item_of(request).startswith("a") else 2)))

    def judge():
        engine = LLMEngine("openai/judge", api_base=scripted_server.api_base, temperature=0.0, transient_attempts=2,
                           backoff_seconds=0.0)
        return LLMJudge(engine, concurrency=2)

    out = tmp_path / "report"
    with pytest.raises(ProviderUnreachable, match="1 solutions could not be judged"):
        evaluate(EvalRequest(split=split, out=out), judge())
    assert not (out / "metrics.json").exists()
    saved = [json.loads(line)["id"] for line in (out / "judge_answers.jsonl").read_text().splitlines()]
    assert sorted(saved) == ["a::circular_logic::0", "a::correct", "b::redundancy::0"]
    down.clear()
    before = len(scripted_server.requests)
    result = evaluate(EvalRequest(split=split, out=out), judge())
    assert [item_of(r["body"]) for r in scripted_server.requests[before:]] == ["c::confidence::0"]
    assert result.metrics["validity"] == 1.0


@pytest.mark.parametrize(("answer", "code", "said"), [
    ("All the steps look fine to me.", 2, "never answered in the format asked for"),
    (json.dumps({"steps": [{"step": 1, "correct": True}]}), 5, "nothing was measured"),
])
def test_a_judge_with_no_valid_answer_exits_non_zero(split, tmp_path, scripted_server, answer, code, said):
    """Issue 29: no valid answer is no measurement: exit 2 (never the format) or 5, saying what the judge returned."""
    scripted_server.script = lambda request: answer
    out = tmp_path / "report"
    result = invoke("eval", str(split), "--judge", "openai/judge", "--api-base", scripted_server.api_base,
                    "--out", str(out))
    assert result.exit_code == code, result.output
    assert said in result.output and f"its last answer: {answer!r}"[:40] in result.output
    assert not (out / "metrics.json").exists()
