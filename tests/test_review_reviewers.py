"""Decisions kept per reviewer: a reviewer's later decision replaces only their own, replacing it needs their
confirmation, and a store written before (tests/fixtures/review_store_v1, made with main at 562a2aa by

    store = ReviewStore(out); store.add_all([Decision(...), ...])   # the five rows its README lists

then checkpointed to one file) is migrated and reads as it did."""
from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from injector.curate.review.store import Decision, ReviewStore, latest_per_reviewer
from test_review import decide, make_run, running

FIXTURE = Path(__file__).parent / "fixtures" / "review_store_v1" / "review.sqlite"
T1, T2, T3 = "t1::counterfactual::0", "t2::counterfactual::0", "t3::counterfactual::0"


def test_a_store_of_the_previous_version_is_migrated_and_reads_as_before(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    shutil.copy(FIXTURE, run / "review.sqlite")
    store = ReviewStore(run)
    with sqlite3.connect(run / "review.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone() == (2,)
        assert "role" in {row[1] for row in db.execute("PRAGMA table_info(decisions)")}
    latest = store.latest()
    assert {cid: (d.decision, d.reviewer) for cid, d in latest.items()} == {
        T1: ("reject", "ada"), T2: ("accept", ""), T3: ("accept", "ada")}
    assert latest[T3].corrected_error_steps == [2, 3]
    assert len(store.rows()) == 5 and {d.role for d in store.rows()} == {"review"}
    # per reviewer: ada's own latest, untouched by the unnamed reviewer's later accept of t2
    assert {cid: d.decision for cid, d in store.latest_of("ada").items()} == {T1: "reject", T2: "reject",
                                                                               T3: "accept"}
    assert set(latest_per_reviewer(store.rows())[T2]) == {"ada", ""}
    # the migrated store takes new decisions, and opening it again changes nothing
    store.record(Decision(T1, "accept", reviewer="bo"))
    assert len(ReviewStore(run).rows()) == 6 and ReviewStore(run).latest()[T1].reviewer == "bo"
    with running([run], reviewer="ada") as server:
        status, answer = decide(server, T1, decision="accept", seen="2026-11-30T10:03:00.000+00:00")
    assert status == 409 and "already decided" in answer["error"]  # ada's migrated decision needs confirming


def test_a_reviewers_later_decision_replaces_only_their_own(tmp_path: Path) -> None:
    store = ReviewStore(make_run(tmp_path / "run"))
    store.record(Decision(T1, "accept", reviewer="ann"))
    store.record(Decision(T1, "reject", reason="not an error", reviewer="bo"))
    store.record(Decision(T1, "reject", reason="error elsewhere", reviewer="ann"))
    per = latest_per_reviewer(store.rows())[T1]
    assert {name: d.reason for name, d in per.items()} == {"ann": "error elsewhere", "bo": "not an error"}
    assert [d.reviewer for d in store.history(T1)] == ["ann", "bo", "ann"]  # history kept


def test_changing_ones_own_decision_needs_confirmation_of_the_one_shown(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    with running([run], reviewer="ann") as server:
        assert decide(server, T2, decision="reject", reason="not an error")[0] == 200
        shown = ReviewStore(run).latest()[T2].time
        status, answer = decide(server, T2, decision="accept")  # a repeated key on a stale page
        assert status == 409 and "meanwhile" in answer["error"]
        status, answer = decide(server, T2, decision="accept", seen=shown)
        assert status == 409 and "confirm" in answer["error"]
        status, answer = decide(server, T2, decision="accept", seen="2001-01-01T00:00:00.000+00:00", confirm=True)
        assert status == 409  # confirmed, but on a page showing another decision
        assert ReviewStore(run).latest()[T2].decision == "reject"
        assert decide(server, T2, decision="accept", seen=shown, confirm=True)[0] == 200
    assert [d.decision for d in ReviewStore(run).history(T2)] == ["reject", "accept"]


def test_another_reviewers_decision_needs_no_confirmation(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    ReviewStore(run).record(Decision(T1, "reject", reason="unreadable", reviewer="bo"))
    with running([run], reviewer="ann") as server:
        assert decide(server, T1, decision="accept")[0] == 200
    assert set(latest_per_reviewer(ReviewStore(run).rows())[T1]) == {"ann", "bo"}
