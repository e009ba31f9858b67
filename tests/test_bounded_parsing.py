"""Bounded parsing (issue 12, item 4): JSON nested too deep or too long from a model, an input file or a review
request ends as an ordinary verdict or error, never a RecursionError, and a cached bad answer never crashes a
resume."""
from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_review import make_run, running

from injector import load_trajectories
from injector.curate.audit import audit_prmbench
from injector.cli.commands import main
from injector.answer.contract import AnswerError, parse_answer
from injector.util.errors import InputError
from injector.util.json_bounds import MAX_ANSWER_BYTES, MAX_JSON_DEPTH, MAX_REVIEW_BODY_BYTES

DEEP = "[" * 100_000
STEPS = ["There are 60 * 7 = 420 seconds in 7 minutes.", "So there are 420 seconds.\n\n# Answer\n\n420"]
GOOD_EDITS = {"question": None, "edits": [{"op": "replace", "step": 1, "text": "There are 60 * 7 = 400 seconds.",
                                           "error": True}], "reason": "wrong product"}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("text", [
    '{"question": null, "edits": [], "reason": ' + DEEP + "}",  # the answer: unclosed
    '{"question": null, "edits": [], "reason": ' + nested(100_000) + "}",  # closed, so valid JSON
    '{"a": ' * 50_000 + "1" + "}" * 50_000,
    "Here it is: " + DEEP,
    '"' + "[{" * 800,  # after a stray quote (found by tests/test_fuzz.py): json_repair would recurse
])
def test_a_deep_answer_is_a_parse_error(text: str) -> None:
    with pytest.raises(AnswerError) as caught:
        parse_answer(text, edits=True)
    assert caught.value.code == "parse_error"
    assert f"more than {MAX_JSON_DEPTH} levels" in caught.value.message


@pytest.mark.parametrize("failure", [RecursionError, ValueError])
def test_json_repair_failing_on_what_the_scan_let_through_is_a_parse_error(monkeypatch, failure) -> None:
    # The scan cannot foresee every guess json_repair makes (it reports its own recursion as a ValueError).
    def recursing(text: str) -> None:
        raise failure("Input nesting exceeds the supported parser recursion depth.")

    monkeypatch.setattr("injector.answer.parsing.json_repair.loads", recursing)
    with pytest.raises(AnswerError) as caught:
        parse_answer('{"reason": "unclosed, ', edits=True)
    assert caught.value.code == "parse_error"


def test_the_depth_limit_is_exact_and_brackets_in_strings_are_text() -> None:
    answer = dict(GOOD_EDITS, reason="[" * 10_000 + "{" * 10_000)  # text, not structure
    assert parse_answer(json.dumps(answer), edits=True).reason.startswith("[[[")
    # The object itself is level 1, so a value nested 63 deep reaches exactly the limit.
    at_limit = json.dumps(GOOD_EDITS)[:-1] + ', "extra": ' + nested(MAX_JSON_DEPTH - 1) + "}"
    assert parse_answer(at_limit, edits=True).reason == "wrong product"
    over = json.dumps(GOOD_EDITS)[:-1] + ', "extra": ' + nested(MAX_JSON_DEPTH) + "}"
    with pytest.raises(AnswerError, match="levels deep"):
        parse_answer(over, edits=True)


def test_an_answer_over_the_size_limit_is_a_parse_error() -> None:
    too_long = json.dumps(dict(GOOD_EDITS, reason="é" * (MAX_ANSWER_BYTES // 2 + 1)), ensure_ascii=False)
    with pytest.raises(AnswerError) as caught:
        parse_answer(too_long, edits=True)
    assert caught.value.code == "parse_error" and "longer than 2 MB" in caught.value.message


def run_args(server, input_path: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--category", "counterfactual", "--input", str(input_path), "--model", "openai/scripted",
            "--api-base", server.api_base, "--out", str(out), "--max-attempts", "1", *extra]


@pytest.fixture
def one_trajectory(tmp_path: Path) -> Path:
    path = tmp_path / "input.jsonl"
    path.write_text(json.dumps({"id": "t1", "question": "How many seconds in 7 minutes?", "steps": STEPS}) + "\n")
    return path


def test_a_deep_answer_is_rejected_and_a_cached_one_never_crashes_a_resume(scripted_server, one_trajectory,
                                                                            tmp_path: Path) -> None:
    scripted_server.script = lambda request: '{"question": null, "edits": [], "reason": ' + DEEP + "}"
    first = CliRunner().invoke(main, run_args(scripted_server, one_trajectory, tmp_path / "a"))
    assert first.exit_code == 0, first.output
    [reject] = [json.loads(line) for line in (tmp_path / "a" / "rejects.jsonl").read_text().splitlines()]
    assert reject["codes"] == ["parse_error"]
    asked = len(scripted_server.requests)
    # The answer is now in the request cache: a run that reads it (a resume, or another run directory) gets the
    # same reject from the cache instead of a crash at the same unit.
    again = CliRunner().invoke(main, run_args(scripted_server, one_trajectory, tmp_path / "b"))
    assert again.exit_code == 0, again.output
    [reject] = [json.loads(line) for line in (tmp_path / "b" / "rejects.jsonl").read_text().splitlines()]
    assert reject["codes"] == ["parse_error"] and reject["provenance"]["attempts"][0].get("cached") is True
    assert len(scripted_server.requests) == asked


def test_a_deep_input_line_is_a_file_line_error(tmp_path: Path) -> None:
    path = tmp_path / "input.jsonl"
    good = json.dumps({"id": "t1", "question": "q", "steps": STEPS})
    deep = json.dumps({"id": "t2", "question": "q", "steps": STEPS, "meta": {"x": json.loads(nested(500))}})
    path.write_text(good + "\n" + deep + "\n" + '{"id": "t3", "steps": ' + DEEP + "\n")
    result = CliRunner().invoke(main, ["render", "--category", "counterfactual", "--input", str(path)])
    assert result.exit_code == 2
    assert f"{path}:2: nested more than {MAX_JSON_DEPTH} levels deep" in result.output
    assert "Traceback" not in result.output
    source = load_trajectories(path, skip_invalid=True)
    assert [t.id for t in source] == ["t1"] and source.stats.invalid == 2


def test_a_long_input_line_is_still_read(tmp_path: Path) -> None:
    # Long lines are allowed (a 50 MB line works); only answers have a size limit. 3 MB keeps the test quick.
    path = tmp_path / "long.jsonl"
    long_step = "x" * (MAX_ANSWER_BYTES + 1024 * 1024)
    path.write_text(json.dumps({"id": "t1", "question": "q", "steps": [long_step, *STEPS]}) + "\n")
    [trajectory] = list(load_trajectories(path))
    assert trajectory.steps[0] == long_step


def test_audit_reports_a_deep_line_by_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "circular.jsonl"
    path.write_text('{"original_question": "q", "original_process": ' + DEEP + "\n")
    with pytest.raises(InputError) as caught:
        audit_prmbench(path)
    assert caught.value.line == 1 and "levels deep" in caught.value.message
    result = CliRunner().invoke(main, ["audit", str(path)])
    assert result.exit_code == 2 and f"{path}:1: nested more than {MAX_JSON_DEPTH} levels deep" in result.output


def post(server, body: bytes) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/api/decide", data=body, method="POST",
                                     headers={"Content-Type": "application/json", "X-Review-Token": server.token})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_review_refuses_a_deep_or_huge_request_with_400(tmp_path: Path) -> None:
    with running([make_run(tmp_path / "run")]) as server:
        status, answer = post(server, ('{"key": "0/c1", "decision": ' + nested(100_000) + "}").encode())
        assert status == 400 and "levels deep" in answer["error"]
        status, answer = post(server, ('{"key": "0/c1", "decision": ' + nested(MAX_JSON_DEPTH) + "}").encode())
        assert status == 400 and "levels deep" in answer["error"]
        # Refused on its declared length, before the body is read (so the client sends only the headers).
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        connection.putrequest("POST", "/api/decide")
        for name, value in {"Content-Type": "application/json", "X-Review-Token": server.token,
                            "Content-Length": str(MAX_REVIEW_BODY_BYTES + 1)}.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        assert response.status == 400 and "oversized" in json.loads(response.read())["error"]
        connection.close()


@pytest.mark.parametrize("command", [["stats"], ["build", "--include-unreviewed", "--out", "SPLIT"]])
def test_a_deep_line_in_a_received_run_directory_is_skipped_not_a_crash(tmp_path: Path, command, caplog) -> None:
    """Run directories travel between people: a line nested past the limit in candidates.jsonl (never written by
    `inject run`) is skipped with a warning naming it, like a torn line, instead of a RecursionError."""
    run_dir = make_run(tmp_path / "run")
    with (run_dir / "candidates.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(nested(100_000) + "\n")
    lines = len((run_dir / "candidates.jsonl").read_text(encoding="utf-8").splitlines())
    args = [part.replace("SPLIT", str(tmp_path / "split")) for part in command]
    result = CliRunner().invoke(main, [args[0], str(run_dir), *args[1:]])
    assert result.exit_code == 0, result.output
    assert f"candidates.jsonl:{lines}: ignoring a line that is not a record (nested more than" in caplog.text


@pytest.mark.parametrize("manifest", ["[" * 100_000, "[1, 2]", "{not json"])
def test_a_broken_manifest_in_a_received_run_directory_is_one_line_and_exit_2(tmp_path: Path, manifest) -> None:
    run_dir = make_run(tmp_path / "run")
    (run_dir / "manifest.json").write_text(manifest, encoding="utf-8")
    result = CliRunner().invoke(main, ["build", str(run_dir), "--include-unreviewed", "--out", str(tmp_path / "s")])
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {run_dir / 'manifest.json'}: not ")
    assert len(result.output.strip().splitlines()) == 1
