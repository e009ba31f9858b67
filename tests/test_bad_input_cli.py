"""Issue 24 item 7, the fuzz cases that ended as exit 1 ("internal error"), each through the CLI: a metrics file
without `threshold` (and a predictions file past the JSON bounds) given to `eval --compare`, a PRM server answering
nested lists, 5,000-deep arrays or 5,000-digit integers, batch output lines that are 5,000 deep or hold 5,000-digit
integers, and a UTF-8 BOM at the start of an eval scores file and of an audit input. Each is exit 2 with one line
naming FILE[:LINE] (or the solution), a reject for a batch line, or read as it would be without the BOM."""
from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from batch_server import BatchServer
from click.testing import CliRunner
from scripted_server import LoopbackServer
from test_batch import always_good, read_jsonl, run_cli, write_input
from test_eval_cli import GOOD, split, write_scores  # noqa: F401 (a fixture)

from injector.cli.commands import main

BIG = "9" * 5000
DEEP = "[" * 5000 + "]" * 5000
FIXTURES = Path(__file__).parent / "fixtures"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def one_error_line(result, start: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {start}"), result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output, result.output


@pytest.fixture
def two_reports(split, tmp_path) -> tuple[Path, Path]:
    scores = write_scores(tmp_path / "scores.jsonl", GOOD)
    reports = tmp_path / "a", tmp_path / "b"
    for report in reports:
        assert invoke("eval", str(split), "--scores", str(scores), "--out", str(report)).exit_code == 0
    return reports


def test_compare_a_metrics_file_without_threshold_is_file_and_field(two_reports, tmp_path):
    a, b = two_reports
    metrics = json.loads((b / "metrics.json").read_text())
    del metrics["threshold"]
    (b / "metrics.json").write_text(json.dumps(metrics))
    one_error_line(invoke("eval", "--compare", str(a), str(b), "--out", str(tmp_path / "c")),
                   f"{b / 'metrics.json'}: not an `inject eval` metrics.json (threshold: Field required)")


@pytest.mark.parametrize("vector, problem", [
    (BIG, "holds an integer of 5000 digits"), ('["x", [1]]', "`vector` must be a list of counts"),
    ("[1, 2]", "`vector` must be a list of counts as long as every other line's")])
def test_compare_a_predictions_line_past_the_bounds_is_file_line(two_reports, tmp_path, vector, problem):
    a, b = two_reports
    lines = (b / "predictions.jsonl").read_text().splitlines()
    first = json.loads(lines[0])
    lines[-1] = json.dumps({**first, "vector": "VECTOR"}).replace('"VECTOR"', vector if vector != BIG else f"[{BIG}]")
    (b / "predictions.jsonl").write_text("\n".join(lines) + "\n")
    result = invoke("eval", "--compare", str(a), str(b), "--out", str(tmp_path / "c"))
    one_error_line(result, f"{b / 'predictions.jsonl'}:{len(lines)}: ")
    assert problem in result.output


class FixedPoolingServer(LoopbackServer):
    """A PRM server (vLLM's /pooling) that answers every request with the same body text."""

    def __init__(self, body: str) -> None:
        data = body.encode()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._serve(Handler)


@pytest.mark.parametrize("rows, problem", [
    ("[[[0.1, 0.9]], [[0.2, 0.8]], [[0.3, 0.7]]]", "score [[0.1, 0.9]] is not a probability"),
    ("[[0.1, [0.9]], [0.2, [0.8]], [0.3, [0.7]]]", "score [0.1, [0.9]] is not a probability"),
    (DEEP, "the PRM server's answer nested more than 64 levels deep"),
    (f"[[0, {BIG}]]", "the PRM server's answer holds an integer of 5000 digits"),
])
def test_a_prm_server_answering_nested_lists_is_one_line_naming_the_solution(split, tmp_path, rows, problem):
    server = FixedPoolingServer('{"data": [{"index": 0, "data": ' + rows + "}]}").start()
    try:
        result = invoke("eval", str(split), "--prm-server", server.api_base, "--prm-model", "m", "--no-cache",
                        "--concurrency", "1", "--out", str(tmp_path / "report"))
    finally:
        server.stop()
    one_error_line(result, "solution '")
    assert problem in result.output
    assert not (tmp_path / "report").exists()


class RawLineFiles(dict):
    """The stub's file store, with placeholders in a batch output file replaced by text `json.dumps` cannot write
    (a 5,000-digit integer) or that the stub's encoder would recurse on (5,000-deep arrays)."""

    def __setitem__(self, key: str, value: bytes) -> None:
        super().__setitem__(key, value.replace(b'"@BIG@"', BIG.encode()).replace(b'"@DEEP@"', DEEP.encode()))


@pytest.mark.parametrize("where", ["usage", "status", "line", "content_parts"])
@pytest.mark.parametrize("placeholder", ["@BIG@", "@DEEP@"])
def test_a_batch_output_line_past_the_bounds_is_a_reject_not_a_crash(tmp_path, where, placeholder):
    def rewrite(row: dict) -> dict:
        if where == "usage":
            row["response"]["body"]["usage"]["prompt_tokens"] = placeholder
        elif where == "status":
            row["response"]["status_code"] = placeholder
        elif where == "line":
            row["response"]["body"] = placeholder
        else:
            row["response"]["body"]["choices"][0]["message"]["content"] = [{"type": "text", "text": placeholder}]
        return row

    server = BatchServer(always_good, rewrite=rewrite).start()
    server.files = RawLineFiles(server.files)
    try:
        out = tmp_path / "run"
        result = run_cli(server, write_input(tmp_path, 2), out, "--max-attempts", "1")
    finally:
        server.stop()
    assert result.exit_code in (0, 5), result.output  # every unit ends: a candidate, a reject, or to retry
    # (litellm's own cost-tracking callback may log a traceback of its reading of a 5,000-deep line: its, not ours)
    assert "internal error" not in result.output
    outcomes = read_jsonl(out / "candidates.jsonl") + read_jsonl(out / "rejects.jsonl")
    assert sorted(record["id"] for record in outcomes) == sorted({record["id"] for record in outcomes})
    assert len(outcomes) == 2


def test_a_bom_at_the_start_of_a_scores_file_is_read_as_without_it(split, tmp_path):
    scores = write_scores(tmp_path / "scores.jsonl", GOOD)
    scores.write_bytes(b"\xef\xbb\xbf" + scores.read_bytes())
    result = invoke("eval", str(split), "--scores", str(scores), "--out", str(tmp_path / "report"))
    assert result.exit_code == 0, result.output
    plain = write_scores(tmp_path / "plain.jsonl", GOOD)
    assert invoke("eval", str(split), "--scores", str(plain), "--out", str(tmp_path / "plain")).exit_code == 0
    with_bom, without = (json.loads((tmp_path / name / "metrics.json").read_text()) for name in ("report", "plain"))
    assert with_bom["prmbench"] == without["prmbench"] and with_bom["processbench"] == without["processbench"]


@pytest.mark.parametrize("steps", [False, True])
def test_a_bom_at_the_start_of_an_audit_input_is_read_as_without_it(tmp_path, steps):
    source = FIXTURES / "prmbench" / "prm_test_p12_multi_solutions.first10.jsonl"
    data = b"".join(source.read_bytes().splitlines(keepends=True)[:3])
    plain, with_bom = tmp_path / "plain.jsonl", tmp_path / "bom.jsonl"
    plain.write_bytes(data)
    with_bom.write_bytes(b"\xef\xbb\xbf" + data)
    flags = ["--steps"] if steps else []
    results = [invoke("audit", str(path), "--report-only", *flags) for path in (plain, with_bom)]
    assert [r.exit_code for r in results] == [0, 0], results[1].output
    assert results[1].output == results[0].output.replace(str(plain), str(with_bom))


def test_a_chat_answer_litellm_cannot_read_is_a_reject_not_a_transient_failure(tmp_path, monkeypatch):
    """litellm reports its own failure to read a 200 answer (content a list of parts) as a 500; it was retried as
    transient and the run ended with exit 5 ("provider unreachable"). Now the unit is a provider_error reject, as
    with the openai SDK client."""
    from scripted_server import Reply, ScriptedServer
    from test_bounded_parsing import STEPS

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = ScriptedServer().start()
    server.script = lambda request: Reply(content=[{"type": "text", "text": '{"first_error_step": 1}'}])
    trajectory = tmp_path / "input.jsonl"
    trajectory.write_text(json.dumps({"id": "t1", "question": "How many seconds in 7 minutes?", "steps": STEPS}) + "\n")
    try:
        run = invoke("run", "--category", "counterfactual", "--input", str(trajectory), "--model", "openai/x",
                     "--api-base", server.api_base, "--out", str(tmp_path / "out"), "--max-attempts", "1",
                     "--client", "litellm")
    finally:
        server.stop()
    assert run.exit_code == 0, run.output
    [reject] = read_jsonl(tmp_path / "out" / "rejects.jsonl")
    assert reject["codes"] == ["provider_error"] and "litellm can read" in json.dumps(reject)


@pytest.mark.parametrize("content", [[{"type": "text", "text": '{"first_error_step": 1}'}], {"a": 1}])
def test_a_chat_answer_whose_content_is_no_text_is_a_reject_not_a_cache_error(tmp_path, monkeypatch, content):
    """The openai SDK client (litellm refuses such an answer itself): the unit is a provider_error reject, and a
    judge that only answers so is one line, exit 2. Was: the content reached the request cache, whose refusal to
    store a list was reported as a full disk, stopping the run."""
    from scripted_server import Reply, ScriptedServer
    from test_bounded_parsing import STEPS

    monkeypatch.setenv("INJECT_CLIENT", "openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    server = ScriptedServer().start()
    server.script = lambda request: Reply(content=content)
    trajectory = tmp_path / "input.jsonl"
    trajectory.write_text(json.dumps({"id": "t1", "question": "How many seconds in 7 minutes?", "steps": STEPS}) + "\n")
    split_file = tmp_path / "split.jsonl"
    split_file.write_text(json.dumps({"id": "a::circular_logic::0", "category": "circular_logic", "modified_question":
                                      "q", "modified_process": ["s1", "s2"], "error_steps": [2]}) + "\n")
    try:
        run = invoke("run", "--category", "counterfactual", "--input", str(trajectory), "--model", "openai/x",
                     "--api-base", server.api_base, "--out", str(tmp_path / "out"), "--max-attempts", "1")
        judged = invoke("eval", str(split_file), "--judge", "openai/j", "--api-base", server.api_base, "--out",
                        str(tmp_path / "report"))
    finally:
        server.stop()
    assert run.exit_code == 0, run.output
    assert [r["codes"] for r in read_jsonl(tmp_path / "out" / "rejects.jsonl")] == [["provider_error"]]
    assert judged.exit_code == 2, judged.output
    errors = [line for line in judged.output.splitlines() if line.startswith("error:")]
    assert errors == [judged.output.splitlines()[-1]] and "has no text choices[0].message.content" in errors[0]
