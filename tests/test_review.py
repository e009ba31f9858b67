"""`inject review` without a browser: access token, loopback, escaping, persistence, re-validation, export/import.

The server is driven over real HTTP on 127.0.0.1 (urllib), started in a thread on port 0.
"""
from __future__ import annotations

import csv
import json
import re
import sqlite3
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from contextlib import contextmanager
from html import escape
from pathlib import Path
from typing import Any, Iterator

import click
import pytest
from click.testing import CliRunner

from injector.cli.commands import InjectGroup
from injector.taxonomy import Taxonomy
from injector.util.errors import UserError
from injector.util.resources import bundled_taxonomies
from injector.curate.review.command import review
from injector.curate.review.server import ReviewServer, make_server
from injector.curate.review.decision_files import export_store, import_file
from injector.curate.review.store import Decision, ReviewStore, apply_decision
from scripted_server import POLL_INTERVAL

HOSTILE_SCRIPT = "<script>alert(1)</script>"
HOSTILE_IMG = '"><img src=x onerror=alert(2)>'
QUESTION = "Maya buys 4 notebooks at $\\$2.75$ each. She pays with a $\\$20$ bill. How much change does she get?"
STEPS = [
    "The notebooks cost $4 \\cdot 2.75 = 11$ dollars.",
    "Her change is $20 - 11 = 9$ dollars.",
    "So she gets $9$ dollars back.\n\n# Answer\n\n9",
]


def candidate(cid: str, category: str = "counterfactual", *, steps: list[str] | None = None,
              modified: list[str] | None = None, error_steps: list[int] | None = None,
              question: str = QUESTION, modified_question: str | None = None, **extra: Any) -> dict[str, Any]:
    """A candidate record as `inject run` writes it (modified_steps computed by the same alignment)."""
    from injector.answer.align import align_steps

    steps = list(steps or STEPS)
    modified = list(modified or [STEPS[0], "Her change is $20 - 11 = 8$ dollars.", STEPS[2]])
    alignment = align_steps(steps, modified)
    deleted = [i + 1 for i in alignment.deleted]
    return {
        "original_question": question, "modified_question": modified_question or question,
        "original_process": steps, "modified_process": modified,
        "modified_steps": [j + 1 for j in alignment.changed], "error_steps": error_steps or [2],
        "reason": "The subtraction is wrong.", "idx": cid.split("::")[0], "question": question,
        "classification": category, "id": cid, "category": category, "trajectory_id": cid.split("::")[0],
        "sample": 0, "warnings": [f"deleted original steps: {', '.join(map(str, deleted))}"] if deleted else [],
        "provenance": {"engine": "offline", "model": "offline", "operator": "change_result",
                       "attempts": [{"codes": ["label_leak"]}, {"codes": []}]},
        **extra,
    }


def sample_candidates() -> list[dict[str, Any]]:
    return [
        candidate("t1::counterfactual::0"),
        candidate("t2::counterfactual::0"),
        # steps 2 and 3 both changed, only 2 marked: marking 3 as well is a valid correction
        candidate("t3::counterfactual::0", modified=[STEPS[0], "Her change is $20 - 11 = 8$ dollars.",
                                                     "So she gets $8$ dollars back.\n\n# Answer\n\n8"]),
        candidate("t4::missing_condition::0", "missing_condition", modified=list(STEPS), error_steps=[2],
                  modified_question="Maya buys 4 notebooks at $\\$2.75$ each. How much change does she get?"),
        candidate("t5::redundancy::0", "redundancy", question=f"What is {HOSTILE_SCRIPT} {HOSTILE_IMG}?",
                  modified=[STEPS[0], f"Restate {HOSTILE_SCRIPT} and {HOSTILE_IMG} again.", *STEPS[1:]],
                  explanations={"2": f"explains {HOSTILE_SCRIPT}"}),
        candidate("t6::counterfactual::0", modified=[STEPS[0], "Her change is $20 - 11 = 8$ dollars."]),
    ]


def make_run(directory: Path, records: list[dict[str, Any]] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    records = sample_candidates() if records is None else records
    (directory / "candidates.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    manifest = {"config": {"taxonomy_path": str(bundled_taxonomies()["prmbench"])}, "status": "finished"}
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return directory


@contextmanager
def running(run_dirs: list[Path], **options: Any) -> Iterator[ReviewServer]:
    server = make_server(run_dirs, **options)
    # A short poll: shutdown() waits for serve_forever's next check, 0.5 s with the stdlib default.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL}, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never a proxy, even if one is set


def http(server: ReviewServer, path: str, *, token: bool = True, data: dict | None = None,
         headers: dict[str, str] | None = None, timeout: float = 10) -> tuple[int, dict[str, str], str]:
    url = f"http://127.0.0.1:{server.port}{path}"
    if token and data is None:
        url += ("&" if "?" in path else "?") + f"token={server.token}"
    all_headers = dict(headers or {})
    body = None
    if data is not None:
        body = json.dumps(data).encode()
        all_headers.setdefault("Content-Type", "application/json")
        if token:
            all_headers["X-Review-Token"] = server.token
    request = urllib.request.Request(url, data=body, headers=all_headers, method="POST" if body else "GET")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read().decode()


def decide(server: ReviewServer, cid: str, *, timeout: float = 10, **payload: Any) -> tuple[int, dict[str, Any]]:
    status, _, body = http(server, "/api/decide", data={"key": f"0/{cid}", **payload}, timeout=timeout)
    return status, json.loads(body)


def burst(server: ReviewServer, ids: list[str]) -> list[Any]:
    """POST a rejection for every id at the same moment (a barrier releases all threads together); each result is
    the HTTP status, or the exception's repr when the connection failed, so a failure says what happened."""
    results: list[Any] = [None] * len(ids)
    start = threading.Barrier(len(ids))

    def post(number: int, cid: str) -> None:
        start.wait()
        try:
            # A generous timeout only guards against a hang: 100 decisions are committed one after another.
            results[number] = decide(server, cid, decision="reject", reason="unreadable", timeout=300)[0]
        except Exception as exc:  # noqa: BLE001 - recorded for the assertion message
            results[number] = repr(exc)

    threads = [threading.Thread(target=post, args=item) for item in enumerate(ids)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run")


def test_token_is_required(run_dir: Path) -> None:
    with running([run_dir]) as server:
        assert server.url.startswith(f"http://127.0.0.1:{server.port}/?token=")
        assert http(server, "/", token=False)[0] == 403
        assert http(server, "/?token=wrong", token=False)[0] == 403
        assert http(server, "/api/decisions", token=False)[0] == 403
        assert http(server, "/api/decide", token=False, data={"key": "0/t1::counterfactual::0",
                                                                "decision": "accept"})[0] == 403
        status, headers, html = http(server, "/")
        assert status == 200 and "t1::counterfactual::0" in html
        cookie = headers["Set-Cookie"].split(";")[0]
        assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
        # the cookie set on the first visit is enough afterwards
        assert http(server, "/", token=False, headers={"Cookie": cookie})[0] == 200
        assert http(server, "/", token=False, headers={"Cookie": cookie.replace("=", "=x", 1)})[0] == 403
        assert "script-src 'nonce-" in headers["Content-Security-Policy"]
    assert ReviewStore(run_dir).latest() == {}


def test_binds_loopback_only(run_dir: Path) -> None:
    with running([run_dir]) as server:
        assert server.server_address[0] == "127.0.0.1"
        assert server.port > 0


def test_a_port_in_use_is_a_user_error(run_dir: Path) -> None:
    with running([run_dir]) as server:
        with pytest.raises(UserError, match=rf"cannot listen on 127\.0\.0\.1:{server.port} .*choose another --port"):
            make_server([run_dir], port=server.port)


def test_a_failed_save_is_reported_not_dropped(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def locked(self, decision):  # type: ignore[no-untyped-def]
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(ReviewStore, "record", locked)
    with running([run_dir]) as server:
        status, answer = decide(server, "t1::counterfactual::0", decision="accept")
        assert status == 500 and "database is locked" in answer["error"]


def test_hostile_text_is_escaped(run_dir: Path) -> None:
    with running([run_dir]) as server:
        status, _, html = http(server, "/?key=0/t5::redundancy::0")
        assert status == 200
        for hostile in (HOSTILE_SCRIPT, HOSTILE_IMG, "<img"):
            assert hostile not in html
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;" in html
        # the page's own scripts only: its inline one and the vendored KaTeX it serves itself
        nonce = re.search(r'<script nonce="([^"]+)"', html).group(1)
        assert re.findall(r"<script[^>]*>", html) == [
            f'<script nonce="{nonce}" src="/static/katex/katex.min.js">',
            f'<script nonce="{nonce}" src="/static/katex/auto-render.min.js">', f'<script nonce="{nonce}">']
        # in the question, the step (diffed, inside <ins>), the explanation and the edit box alike
        assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 4
        # a rejection reason is untrusted too
        assert decide(server, "t5::redundancy::0", decision="reject", reason=HOSTILE_IMG)[0] == 200
        html = http(server, "/?key=0/t5::redundancy::0")[2]
        assert "<img" not in html and "reason: &quot;&gt;&lt;img" in html


def test_page_shows_the_candidate(run_dir: Path) -> None:
    with running([run_dir]) as server:
        html = http(server, "/?key=0/t6::counterfactual::0")[2]
        assert "Empirical Soundness" in html  # the category name from the run's taxonomy, and its definition
        assert escape(Taxonomy.load().category("counterfactual").definition) in html
        # word-level difference, a formula counting as one word (KaTeX typesets it whole inside the highlight)
        assert "is <del>$20 - 11 = 9$</del> dollars" in html and "is <ins>$20 - 11 = 8$</ins> dollars" in html
        assert 'class="deleted"' in html and "deleted original steps: 3" in html
        assert "attempt 1: label_leak" in html and "change_result" in html
        assert "$4 \\cdot 2.75 = 11$" in html  # LaTeX as written
        html = http(server, "/?key=0/t4::missing_condition::0")[2]
        assert "question <span class=\"badge changed\">edited</span>" in html
        assert "<del>She pays with a" in html


def test_filters_and_progress(run_dir: Path) -> None:
    with running([run_dir]) as server:
        assert decide(server, "t1::counterfactual::0", decision="accept")[0] == 200
        assert decide(server, "t2::counterfactual::0", decision="reject", reason="not an error")[0] == 200
        html = http(server, "/")[2]
        assert "reviewed 2 / 6 (accepted 1, rejected 1)" in html
        assert "<td>counterfactual</td><td>2 / 4</td><td>1</td><td>1</td>" in html
        html = http(server, "/?status=unreviewed&cat=counterfactual")[2]
        assert "1 of 2 in this view" in html and 'data-key="0/t3::counterfactual::0"' in html
        html = http(server, "/?status=rejected")[2]
        assert "1 of 1 in this view" in html and 'data-key="0/t2::counterfactual::0"' in html


def test_decision_answers_with_the_next_candidate_of_the_view(run_dir: Path) -> None:
    with running([run_dir]) as server:
        status, answer = decide(server, "t1::counterfactual::0", decision="accept", status="unreviewed")
        assert status == 200 and answer["next"] == "/?key=0%2Ft2%3A%3Acounterfactual%3A%3A0&status=unreviewed"
        status, answer = decide(server, "t2::counterfactual::0", decision="reject", reason="")
        assert status == 422 and "give a reason" in answer["error"]


def test_decisions_survive_a_restart(run_dir: Path) -> None:
    with running([run_dir], reviewer="ada") as server:
        assert decide(server, "t1::counterfactual::0", decision="accept")[0] == 200
        assert decide(server, "t2::counterfactual::0", decision="reject", reason="error elsewhere")[0] == 200
    with running([run_dir]) as server:
        latest = json.loads(http(server, "/api/decisions")[2])
        assert latest["0/t1::counterfactual::0"]["decision"] == "accept"
        assert latest["0/t2::counterfactual::0"]["reason"] == "error elsewhere"
        assert latest["0/t2::counterfactual::0"]["reviewer"] == "ada"
        html = http(server, "/?key=0/t2::counterfactual::0")[2]
        assert "rejected; reason: error elsewhere (ada, " in html
    rows = sqlite3.connect(run_dir / "review.sqlite").execute("SELECT id, decision FROM decisions").fetchall()
    assert rows == [("t1::counterfactual::0", "accept"), ("t2::counterfactual::0", "reject")]


def test_a_correction_is_revalidated(run_dir: Path) -> None:
    with running([run_dir]) as server:
        # step 1 is unchanged: counterfactual forbids marking it
        status, answer = decide(server, "t1::counterfactual::0", decision="accept", corrected_error_steps=[1, 2])
        assert status == 422
        assert "error_on_unchanged_step" in answer["error"]
        assert "error step 1 is unchanged from the original" in answer["error"]
        # an edit that announces its own error breaks the label-leak rule
        status, answer = decide(server, "t1::counterfactual::0", decision="accept",
                                edited_steps={"2": "Her change is incorrectly $20 - 11 = 8$ dollars."})
        assert status == 422 and "label_leak" in answer["error"] and "'incorrectly'" in answer["error"]
        status, answer = decide(server, "t1::counterfactual::0", decision="accept", corrected_error_steps=[])
        assert status == 422 and "no_error_steps" in answer["error"]
        assert ReviewStore(run_dir).latest() == {}  # nothing refused was saved
        # missing_condition allows an error on an unchanged step
        assert decide(server, "t4::missing_condition::0", decision="accept", corrected_error_steps=[2, 3])[0] == 200
        status, answer = decide(server, "t3::counterfactual::0", decision="accept", corrected_error_steps=[2, 3],
                                edited_steps={"1": STEPS[0], "2": "Her change is $20 - 11 = 7$ dollars."})
        assert status == 200
    latest = ReviewStore(run_dir).latest()
    assert latest["t4::missing_condition::0"].corrected_error_steps == [2, 3]
    fixed = latest["t3::counterfactual::0"]
    assert fixed.decision == "accept" and fixed.corrected_error_steps == [2, 3]
    assert fixed.edited_steps == {2: "Her change is $20 - 11 = 7$ dollars."}  # step 1 was not really edited


def test_apply_decision() -> None:
    from injector.records.models import Candidate

    record = Candidate.model_validate(candidate("t1::counterfactual::0"))
    edited = apply_decision(record, Decision("t1::counterfactual::0", "accept", corrected_error_steps=[2, 3],
                                             edited_steps={3: "So she gets $8$ dollars back.\n\n# Answer\n\n8"}))
    assert edited.modified_process[2].startswith("So she gets $8$")
    assert edited.modified_steps == [2, 3] and edited.error_steps == [2, 3]
    assert record.modified_steps == [2]  # the input is not changed
    # editing a step back to the original text makes it unchanged again
    reverted = apply_decision(record, Decision("x", "accept", edited_steps={2: STEPS[1] + "  "}))
    assert reverted.modified_steps == [] and reverted.modified_process[1] == STEPS[1]
    assert apply_decision(record, Decision("x", "reject", reason="no")) == record


def test_the_latest_decision_wins(run_dir: Path) -> None:
    store = ReviewStore(run_dir)
    store.record(Decision("a", "accept", reviewer="ada"))
    store.record(Decision("a", "reject", reason="not this category", reviewer="bob"))
    store.record(Decision("b", "reject", reason="unreadable"))
    store.record(Decision("b", "accept", corrected_error_steps=[3]))
    latest = ReviewStore(run_dir).latest()
    assert latest["a"].decision == "reject" and latest["a"].reviewer == "bob"
    assert latest["b"].decision == "accept" and latest["b"].corrected_error_steps == [3]
    assert [d.decision for d in store.history("a")] == ["accept", "reject"]
    # an older decision imported later does not override newer work
    store.add_all([Decision("a", "accept", time="2001-01-01T00:00:00Z")])  # as `--import` adds rows
    assert store.latest()["a"].decision == "reject"
    assert store.history("a")[0].time == "2001-01-01T00:00:00.000+00:00"


def test_two_tabs_at_once_lose_nothing(run_dir: Path) -> None:
    """Three tabs decide every candidate at once: one decision each is saved, the others are refused (409), none
    overwrites another silently, and every POST is answered."""
    ids = [r["id"] for r in sample_candidates()]
    with running([run_dir]) as server:
        results = burst(server, ids * 3)
    assert sorted(results) == [200] * len(ids) + [409] * len(ids) * 2
    assert set(ReviewStore(run_dir).latest()) == set(ids)
    assert len(ReviewStore(run_dir).rows()) == len(ids)


def test_a_burst_of_100_posts_is_all_answered_and_stored(tmp_path: Path) -> None:
    """The listen backlog absorbs a burst: with the default of 5, about half of 50 simultaneous POSTs were reset."""
    ids = [f"b{n}::counterfactual::0" for n in range(100)]
    run = make_run(tmp_path / "run", [candidate(cid) for cid in ids])
    with running([run]) as server:
        assert server.request_queue_size >= 128
        results = burst(server, ids)
    assert results == [200] * len(ids)
    assert set(ReviewStore(run).latest()) == set(ids) and len(ReviewStore(run).rows()) == len(ids)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_export_import_round_trip(tmp_path: Path, suffix: str) -> None:
    source = ReviewStore(make_run(tmp_path / "a"))
    decisions = [
        Decision("t1::counterfactual::0", "accept", reviewer="ada"),
        Decision("t2::counterfactual::0", "reject", reason='leaks its label; "quoted", comma\nand newline',
                 reviewer="bob"),
        Decision("t3::counterfactual::0", "accept", corrected_error_steps=[2, 3],
                 edited_steps={2: "Her change is $20 - 11 = 7$ dollars — é, \\frac{1}{2}"}, reviewer="ada"),
        Decision("t1::counterfactual::0", "reject", reason="not an error", reviewer="ada"),
    ]
    for decision in decisions:
        source.record(decision)
    exported = tmp_path / f"decisions{suffix}"
    assert export_store(source, exported) == 4
    target = ReviewStore(make_run(tmp_path / "b"))
    assert import_file(target, exported) == 4
    assert target.rows() == source.rows()
    assert target.latest()["t1::counterfactual::0"].reason == "not an error"
    assert import_file(target, exported) == 0  # rows already there are not added twice
    assert len(target.rows()) == 4


@pytest.mark.parametrize("content, line, message", [
    ('{"id": "a", "decision": "accept"}\n{"id": "b", "decision": "maybe"}\n', 2, "expected accept or reject"),
    ('{"id": "a", "decision": "accept"}\n\n{"id": "b", "decision": "accept"\n', 3, "not valid JSON"),
    ('{"id": "a", "decision": "accept", "corrected_error_steps": [0]}\n', 1, "corrected_error_steps"),
    ('{"decision": "accept"}\n', 1, "id"),
    ('{"id": "a", "decision": "accept", "colour": "red"}\n', 1, "unknown field colour"),
])
def test_import_names_the_bad_line(tmp_path: Path, content: str, line: int, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    store = ReviewStore(make_run(tmp_path / "run"))
    with pytest.raises(UserError, match=rf"bad\.jsonl:{line}: .*{message}"):
        import_file(store, path)
    assert store.rows() == []  # all or nothing


def test_import_bad_csv_and_suffix(tmp_path: Path) -> None:
    store = ReviewStore(make_run(tmp_path / "run"))
    path = tmp_path / "bad.csv"
    path.write_text("id,decision,corrected_error_steps\na,accept,[2]\nb,accept,2 and 3\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"bad\.csv:3: corrected_error_steps: not JSON"):
        import_file(store, path)
    with pytest.raises(UserError, match=r"decisions\.txt: .*\.jsonl or \.csv"):
        export_store(store, tmp_path / "decisions.txt")


@pytest.fixture
def cli() -> click.Group:
    group = InjectGroup(name="inject")  # the error handling of the real `inject` group
    group.add_command(review)
    return group


def test_cli_export_and_import(cli: click.Group, tmp_path: Path) -> None:
    first, second = make_run(tmp_path / "first"), make_run(tmp_path / "second", [candidate("u1::counterfactual::0")])
    ReviewStore(first).record(Decision("t1::counterfactual::0", "accept", reviewer="ada"))
    ReviewStore(second).record(Decision("u1::counterfactual::0", "reject", reason="unreadable"))
    out = tmp_path / "all.csv"
    result = CliRunner().invoke(cli, ["review", str(first), str(second), "--export", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 decisions written" in result.output
    fresh = make_run(tmp_path / "fresh")
    other = make_run(tmp_path / "other", [candidate("u1::counterfactual::0")])
    result = CliRunner().invoke(cli, ["review", str(fresh), str(other), "--import", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 decisions added (0 already there)" in result.output
    assert ReviewStore(fresh).latest()["t1::counterfactual::0"].reviewer == "ada"
    assert ReviewStore(other).latest()["u1::counterfactual::0"].reason == "unreadable"
    # a row for a candidate none of the runs holds is refused, naming the line; the other row is there already
    result = CliRunner().invoke(cli, ["review", str(other), "--import", str(out)])
    assert result.exit_code == 2
    assert "all.csv:2: refused: candidate 't1::counterfactual::0' is in none of" in result.output
    assert "0 decisions added (1 already there), 1 refused" in result.output


BAD_ROWS = [  # (a row of an import file, the same decision as the page posts it)
    ({"corrected_error_steps": []}, {"corrected_error_steps": []}),  # an error labelled fully correct
    ({"edited_steps": {"1": ""}}, {"edited_steps": {"1": ""}}),  # an empty step
    ({"corrected_error_steps": [99]}, {"corrected_error_steps": [99]}),  # a step the record lacks
    ({"edited_steps": {"9": "new text"}}, {"edited_steps": {"9": "new text"}}),  # an edit of a missing step
    ({"corrected_error_steps": [1, 2]}, {"corrected_error_steps": [1, 2]}),  # an error on an unchanged step
]


def test_import_applies_exactly_the_apps_checks(cli: click.Group, tmp_path: Path) -> None:
    """Each row the app would refuse is refused on import with the app's own message, FILE:LINE first; the good
    rows are stored."""
    run = make_run(tmp_path / "run")
    cid = "t1::counterfactual::0"
    rows = [{"id": cid, "decision": "accept", **fields} for fields, _ in BAD_ROWS]
    rows += [{"id": "t2::counterfactual::0", "decision": "reject", "reason": "  "},  # no reason
             {"id": "t3::counterfactual::0", "decision": "accept", "corrected_error_steps": [2, 3], "reviewer": "ada"},
             {"id": "t2::counterfactual::0", "decision": "reject", "reason": "not an error "}]
    path = tmp_path / "decisions.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    result = CliRunner().invoke(cli, ["review", str(run), "--import", str(path)])
    assert result.exit_code == 2, result.output
    refused = [line for line in result.stderr.splitlines() if ": refused: " in line]
    assert [line.split(": refused: ")[0] for line in refused] == [f"{path}:{n}" for n in range(1, 7)]
    assert "2 decisions added (0 already there), 6 refused" in result.stdout
    assert "6 row(s) refused (listed above), the others stored" in result.stderr
    latest = ReviewStore(run).latest()
    assert sorted(latest) == ["t2::counterfactual::0", "t3::counterfactual::0"]
    assert latest["t3::counterfactual::0"].corrected_error_steps == [2, 3]
    assert latest["t2::counterfactual::0"].reason == "not an error"  # normalised as the app stores it
    # the app refuses the same decisions with the same words: one function decides both
    fresh = make_run(tmp_path / "fresh")
    with running([fresh]) as server:
        for (_, page), line in zip(BAD_ROWS, refused):
            status, answer = decide(server, cid, decision="accept", **page)
            assert status == 422 and line.endswith(f": refused: {answer['error']}")
        status, answer = decide(server, "t2::counterfactual::0", decision="reject", reason="  ")
        assert status == 422 and refused[5].endswith(f": refused: {answer['error']}")
    assert ReviewStore(fresh).latest() == {}


def test_import_reports_malformed_rows_and_stores_the_rest(cli: click.Group, tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    path = tmp_path / "d.jsonl"
    path.write_text('{"id": "t1::counterfactual::0", "decision": "maybe"}\n[1]\n{"id": "t1::counterfactual::0", '
                    '"decision": "accept"}\n{"id": "t2::counterfactual::0"\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["review", str(run), "--import", str(path)])
    assert result.exit_code == 2
    assert f"{path}:1: refused: decision: expected accept or reject" in result.output
    assert f"{path}:2: refused: expected a JSON object" in result.output
    assert f"{path}:4: refused: not valid JSON" in result.output
    assert list(ReviewStore(run).latest()) == ["t1::counterfactual::0"]


def test_import_of_a_file_that_is_not_utf8_is_a_user_error(cli: click.Group, tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    path = tmp_path / "d.jsonl"
    path.write_bytes(b'{"id": "t1::counterfactual::0", "decision": "accept"}\n{"id": "t2", "reason": "\xe9t\xe9"}\n')
    result = CliRunner().invoke(cli, ["review", str(run), "--import", str(path)])
    assert result.exit_code == 2, result.output
    assert result.output.strip() == f"error: {path}:2: not UTF-8 text (byte 78); save the file as UTF-8 and import " \
                                    "it again"
    assert ReviewStore(run).latest() == {}


def test_import_reads_csv_fields_over_128_kib(cli: click.Group, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """csv's own limit (128 KiB) made a long edited step an internal error; the limit is now MAX_FIELD."""
    from injector.curate.review import decision_files as store

    run = make_run(tmp_path / "run")
    long_step = "Her change is $20 - 11 = 7$ dollars. " + "We double-check it. " * 10_000  # ~200 KB
    path = tmp_path / "d.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        csv_writer = csv.writer(handle)
        csv_writer.writerow(["id", "decision", "edited_steps"])
        csv_writer.writerow(["t3::counterfactual::0", "accept", json.dumps({"2": long_step})])
    result = CliRunner().invoke(cli, ["review", str(run), "--import", str(path)])
    assert result.exit_code == 0, result.output
    assert ReviewStore(run).latest()["t3::counterfactual::0"].edited_steps == {2: long_step}
    # a field beyond the limit is a message naming the line, not an internal error
    monkeypatch.setattr(store, "MAX_FIELD", 1024 * 1024 // 8)
    result = CliRunner().invoke(cli, ["review", str(run), "--import", str(path)])
    assert result.exit_code == 2, result.output
    assert f"error: {path}:2: not readable as CSV (field larger than field limit" in result.output


def test_cli_refuses_a_directory_without_candidates(cli: click.Group, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["review", str(tmp_path), "--no-browser"])
    assert result.exit_code == 2
    assert f"{tmp_path}: no candidates.jsonl here; give a run directory written by `inject run`" in result.output


def test_cli_serves_until_stopped(run_dir: Path) -> None:
    """The real command in its own process: prints the URL (no browser), serves it, and stops on SIGINT."""
    code = "import sys; from injector.curate.review.command import review; review(sys.argv[1:])"
    process = subprocess.Popen([sys.executable, "-c", code, str(run_dir), "--no-browser", "--reviewer", "cli"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = ""
        for _ in range(5):
            line = process.stdout.readline()
            if line.startswith("open "):
                url = line.split()[1]
                break
        match = re.fullmatch(r"http://127\.0\.0\.1:(\d+)/\?token=[\w-]{40,}", url)
        assert match, url
        with _OPENER.open(url, timeout=10) as response:
            assert response.status == 200 and "t1::counterfactual::0" in response.read().decode()
        with pytest.raises(urllib.error.HTTPError) as refused:
            _OPENER.open(url.split("?")[0], timeout=10)
        assert refused.value.code == 403
    finally:
        process.send_signal(2)
        out, err = process.communicate(timeout=10)
    assert process.returncode == 0, err
    assert "stopped; decisions are saved" in out

