"""The review app at any size (issue 30 item 3): a page and a decision read the decisions of the candidates the
page shows, never the whole store. Counted in rows SQLite hands back and statements run, not in time: the counts on a
store ten times larger are the same."""
from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any, Iterator

import pytest

from injector.curate.review.assign import make_plan, write_plan
from injector.curate.review.store import STORE_FILE, Decision, ReviewStore
from test_review import candidate, decide, http, make_run, running

TIME = "2026-01-01T00:00:00.000+00:00"


def big_run(directory: Path, size: int) -> Path:
    """A run of `size` candidates (categories alternating), the first half decided (accept / reject alternating)."""
    template = json.dumps(candidate("ID"))
    other = template.replace('"counterfactual"', '"redundancy"')
    make_run(directory, [])
    with (directory / "candidates.jsonl").open("w", encoding="utf-8") as out:  # cheap: one template, streamed
        out.writelines((other if n % 2 else template).replace('"ID"', f'"c{n}::x::0"') + "\n" for n in range(size))
    ReviewStore(directory)  # the schema
    rows = [(f"c{n}::x::0", "accept" if n % 3 else "reject", "" if n % 3 else "not an error", None, None, "ada",
             TIME, "review") for n in range(size // 2)]
    with sqlite3.connect(directory / STORE_FILE) as db:
        db.executemany("INSERT INTO decisions (id, decision, reason, corrected_error_steps, edited_steps, reviewer, "
                       "time, role) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    return directory


class Counter:
    """Counts what every connection of the review store hands back (rows) and runs (statements)."""

    def __init__(self) -> None:
        self.rows = 0
        self.statements = 0

    def row(self, cursor: sqlite3.Cursor, row: tuple) -> tuple:
        self.rows += 1
        return row

    def statement(self, sql: str) -> None:
        self.statements += 1


@pytest.fixture
def counter(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter]:
    counting = Counter()
    connect = ReviewStore._connect

    def counted(self: ReviewStore) -> sqlite3.Connection:
        db = connect(self)
        db.row_factory = counting.row
        db.set_trace_callback(counting.statement)
        return db

    monkeypatch.setattr(ReviewStore, "_connect", counted)
    yield counting


def touched(run: Path, counter: Counter, size: int, **options: Any) -> dict[str, Any]:
    """Rows and statements of: a page amid decided candidates, one amid undecided ones, and a decision there
    (`options`: the server's, bob's plain review by default)."""
    found: dict[str, Any] = {}
    undecided = size - 500
    with running([run], **(options or {"reviewer": "bob"})) as server:
        for name, path in (("page decided", "/?key=0/c500::x::0"), ("page undecided", f"/?key=0/c{undecided}::x::0"),
                           ("page filtered", "/?key=0/c501::x::0&cat=redundancy"),
                           ("page unreviewed", f"/?key=0/c{undecided + 2}::x::0&status=unreviewed"),
                           ("page rejected", "/?key=0/c501::x::0&status=rejected")):
            http(server, path)  # a filtered view's index is made on its first use (once, kept in the store)
            counter.rows = counter.statements = 0
            status, _, body = http(server, path)
            assert status == 200 and "in this view" in body and 'aria-current="true"' in body
            found[name] = (counter.rows, counter.statements)
        found["positions"] = re.findall(r'class="position">(\d+) of (\d+)', body)
        counter.rows = counter.statements = 0
        status, answer = decide(server, f"c{undecided}::x::0", decision="accept")
        assert status == 200, answer
        found["decision"] = (counter.rows, counter.statements)
        assert answer["next"].endswith(f"c{undecided + 1}%3A%3Ax%3A%3A0")
    return found


def test_a_page_and_a_decision_touch_as_many_rows_at_ten_times_the_size(tmp_path: Path, counter: Counter) -> None:
    small = touched(big_run(tmp_path / "small", 2_000), counter, 2_000)
    large = touched(big_run(tmp_path / "large", 20_000), counter, 20_000)
    assert small.pop("positions") == [("168", "334")] and large.pop("positions") == [("168", "3334")]
    assert small == large
    rows, _ = large["page decided"]
    assert rows < 1_000  # the page's own window of candidates (201) and the progress counts, not 10k decisions


def test_at_100k_candidates_a_page_and_a_decision_touch_the_rows_of_a_page(tmp_path: Path,
                                                                         counter: Counter) -> None:
    """Issue 30's own test: on a 100k-candidate run, half decided, a page (filtered by category or status too) and
    a decision hand back as many rows and run as many statements as on a run of 2,000 (the counts before the
    current entry are COUNTs SQLite does on the view's index: one row each)."""
    small = touched(big_run(tmp_path / "small", 2_000), counter, 2_000)
    large = touched(big_run(tmp_path / "large", 100_000), counter, 100_000)
    assert large.pop("positions") == [("168", "16667")]  # c501: the 168th rejected (every third of the first half)
    small.pop("positions")
    assert small == large
    assert max(rows for rows, _ in large.values()) < 1_000


def planned_run(directory: Path, size: int) -> Path:
    """`big_run` with a review plan of two reviewers, overlap 2 (each queue holds every candidate): ada, who
    decided the first half, and bob."""
    run = big_run(directory, size)
    write_plan(run, make_plan([f"c{n}::x::0" for n in range(size)], ["ada", "bob"], overlap=2))
    return run


def test_in_a_plans_queue_a_page_and_a_decision_touch_as_many_rows_at_fifty_times_the_size(
        tmp_path: Path, counter: Counter) -> None:
    """Issue 30 item 3 under a review plan: ada's queue (every candidate, the first half decided by her) is read
    from the index, and her own decisions and counts are kept by triggers, so a page (filtered by category or by
    her own status too) and a decision hand back as many rows on 100k candidates as on 2,000."""
    small = touched(planned_run(tmp_path / "small", 2_000), counter, 2_000, reviewer="ada", queue=True)
    large = touched(planned_run(tmp_path / "large", 100_000), counter, 100_000, reviewer="ada", queue=True)
    assert large.pop("positions") == [("168", "16667")]  # c501: the 168th she rejected
    assert small.pop("positions") == [("168", "334")]
    assert small == large
    assert max(rows for rows, _ in large.values()) < 1_000


def test_a_reviewers_own_status_and_counts_follow_their_decisions_only(tmp_path: Path) -> None:
    """The trigger-kept status of a plan's queue is the reviewer's own latest review: another reviewer's decision,
    an adjudication or an older import leaves it, a later decision of theirs replaces it, and the counts follow."""
    run = planned_run(tmp_path / "run", 6)  # ada decided c0 (reject), c1 and c2 (accept)
    with sqlite3.connect(run / STORE_FILE) as db:
        db.executemany("INSERT INTO decisions (id, decision, reason, reviewer, time, role) VALUES (?, ?, ?, ?, ?, ?)", [
            ("c3::x::0", "reject", "no", "bob", TIME, "review"),  # someone else's: not hers
            ("c4::x::0", "reject", "no", "ada", TIME, "adjudication"),  # not a review
            ("c1::x::0", "reject", "old", "ada", "2025-01-01T00:00:00.000+00:00", "review"),  # older: not hers
        ])
    ReviewStore(run).record(Decision("c2::x::0", "reject", "changed my mind", reviewer="ada"))
    with running([run], reviewer="ada", queue=True) as server:
        body = http(server, "/?status=rejected")[2]
        assert "reviewed 3 / 6 (accepted 1, rejected 2)" in body
        assert re.findall(r'class="position">(\d+) of (\d+)', body) == [("1", "2")]
        assert http(server, "/?status=unreviewed")[2].count('class="position">1 of 3') == 1
    with running([run], reviewer="bob", queue=True) as server:
        assert "reviewed 1 / 6 (accepted 0, rejected 1)" in http(server, "/")[2]


def test_progress_counts_the_standing_decisions(tmp_path: Path) -> None:
    run = big_run(tmp_path / "run", 60)
    with running([run], reviewer="bob") as server:
        body = http(server, "/")[2]
    assert "reviewed 30 / 60 (accepted 20, rejected 10)" in body
    assert "<td>counterfactual</td><td>15 / 30</td><td>10</td><td>5</td>" in body


def test_the_standing_table_follows_the_history(tmp_path: Path) -> None:
    """The trigger-kept standing decision is the one `latest` computes from the whole history: a later decision
    replaces it, an older import does not, an adjudication stands over later reviews."""
    run = big_run(tmp_path / "run", 4)
    store = ReviewStore(run)
    store.register([(f"c{n}::x::0", "even" if n % 2 == 0 else "odd") for n in range(4)])  # after decisions
    with sqlite3.connect(run / STORE_FILE) as db:
        db.executemany("INSERT INTO decisions (id, decision, reason, reviewer, time, role) VALUES (?, ?, ?, ?, ?, ?)", [
            ("c0::x::0", "accept", "", "bob", "2026-01-02T00:00:00.000+00:00", "review"),  # later: stands
            ("c1::x::0", "reject", "late import", "cy", "2025-01-01T00:00:00.000+00:00", "review"),  # older: not
            ("c2::x::0", "reject", "no", "eve", "2025-06-01T00:00:00.000+00:00", "adjudication"),
            ("c2::x::0", "accept", "", "bob", "2026-06-01T00:00:00.000+00:00", "review"),  # after an adjudication
        ])
    assert store.decided() == {d.id: d.decision for d in store.latest().values()}
    assert store.decided() == {"c0::x::0": "accept", "c1::x::0": "accept", "c2::x::0": "reject"}
    assert store.latest_for(["c2::x::0", "c3::x::0"]) == {"c2::x::0": store.latest()["c2::x::0"]}
    # the tally the progress reads, kept by triggers through registration, replacement and refusal
    assert sorted(store.progress()) == [("even", "accept", 1), ("even", "reject", 1), ("odd", "accept", 1)]
    store.register([("c3::x::0", "odd")])  # registered again: counted once
    store.record(Decision("c3::x::0", "reject", "no"))  # an undecided one, decided
    assert sorted(store.progress())[-2:] == [("odd", "accept", 1), ("odd", "reject", 1)]


def test_a_store_of_version_2_gets_its_standing_table(tmp_path: Path) -> None:
    run = big_run(tmp_path / "run", 10)
    with sqlite3.connect(run / STORE_FILE) as db:
        db.executescript("DROP TRIGGER decisions_standing; DROP TABLE standing; DROP TABLE candidates; "
                         "PRAGMA user_version = 2;")
    store = ReviewStore(run)
    assert store.decided() == {d.id: d.decision for d in store.latest().values()} and len(store.decided()) == 5


def test_two_runs_plans_queues_are_walked_run_after_run(tmp_path: Path) -> None:
    """Each run's plan gives the reviewer a queue; the app walks them run after run (the window's neighbours cross
    from one run's queue to the next), and a run without a plan shows none of its candidates in a queue."""
    runs = [planned_run(tmp_path / name, 4) for name in ("a", "b")]  # ada decided c0 and c1 of each
    plainly = big_run(tmp_path / "c", 4)
    with running([*runs, plainly], reviewer="ada", queue=True) as server:
        body = http(server, "/?key=1/c0::x::0")[2]
        assert re.findall(r'class="position">(\d+) of (\d+)', body) == [("5", "8")]
        assert 'href="/?key=0%2Fc3%3A%3Ax%3A%3A0"' in body and "key=2%2F" not in body
        body = http(server, "/?key=1/c2::x::0&status=unreviewed")[2]
        assert re.findall(r'class="position">(\d+) of (\d+)', body) == [("3", "4")]
        status, answer = decide(server, "c3::x::0", decision="accept")  # run 0's last
        assert status == 200 and answer["next"].endswith("1%2Fc0%3A%3Ax%3A%3A0"), answer
        assert "reviewed 5 / 8 (accepted 3, rejected 2)" in http(server, "/?key=1/c2::x::0")[2]


def test_an_id_listed_twice_in_a_queue_keeps_its_first_place(tmp_path: Path) -> None:
    """A hand-edited plan may list a candidate twice in one queue, or one the run lacks: the queue shows it once,
    at its first place, and leaves the unknown one out (before: building the index failed on its unique key)."""
    run = big_run(tmp_path / "run", 4)
    queues = {"ada": ["c2::x::0", "c0::x::0", "c2::x::0", "nope", "c3::x::0"], "bob": ["c1::x::0"]}
    plan = {"reviewers": ["ada", "bob"], "overlap": 1, "queues": queues}
    (run / "review-plan.json").write_text(json.dumps(plan), encoding="utf-8")
    with running([run], reviewer="ada", queue=True) as server:
        body = http(server, "/?key=0/c0::x::0")[2]
    assert re.findall(r'class="position">(\d+) of (\d+)', body) == [("2", "3")]
    listed = re.findall(r'title="(c\d::x::0)"', body)
    assert listed == ["c2::x::0", "c0::x::0", "c3::x::0"], listed


def disputed_run(directory: Path, size: int) -> Path:
    """`big_run` where bob reviewed ada's half too, agreeing but on five candidates (he rejects ada's accepts)."""
    run = big_run(directory, size)
    rows = [(f"c{n}::x::0", "reject" if n in (1, 2, 4, 5, 7) else ("accept" if n % 3 else "reject"),
             "no" if n in (1, 2, 4, 5, 7) or not n % 3 else "", "bob", TIME, "review") for n in range(size // 2)]
    with sqlite3.connect(run / STORE_FILE) as db:
        db.executemany("INSERT INTO decisions (id, decision, reason, reviewer, time, role) VALUES (?, ?, ?, ?, ?, ?)",
                       rows)
    return run


def adjudicating(run: Path, counter: Counter) -> tuple[int, int, list[str]]:
    """Rows and statements of judy's adjudication queue being made and its first page, and the queue's ids."""
    from injector.curate.review.adjudicate import to_adjudication
    from injector.curate.review.render import render_page
    from injector.curate.review.session import ReviewSession, View

    session = ReviewSession([run], "judy")  # the run's index, built once (its build is counted elsewhere)
    counter.rows = counter.statements = 0
    to_adjudication(session)
    page = render_page(session, key=None, view=View(), token="t", nonce="n")
    assert "reviewers' decisions (disputed)" in page
    return counter.rows, counter.statements, [entry.id for entry in session.runs[0].entries]


def test_the_adjudicators_queue_reads_the_disputed_candidates_only(tmp_path: Path, counter: Counter) -> None:
    """Issue 30 item 3: the adjudicator's queue is found by SQLite over the decisions' id index; only the
    candidates reviewed in more than one way are read (before: every decision and every decided candidate)."""
    *small, small_ids = adjudicating(disputed_run(tmp_path / "small", 2_000), counter)
    *large, large_ids = adjudicating(disputed_run(tmp_path / "large", 40_000), counter)
    assert small_ids == large_ids == [f"c{n}::x::0" for n in (1, 2, 4, 5, 7)]
    assert small == large
    assert large[0] < 1_000


def decisions_of(run: Path, counter: Counter, reviewer: str) -> tuple[int, int, dict[str, Any]]:
    with running([run], reviewer=reviewer, queue=True) as server:
        counter.rows = counter.statements = 0
        status, _, body = http(server, "/api/decisions")
        assert status == 200
        return counter.rows, counter.statements, json.loads(body)


def test_in_a_blind_queue_the_decisions_api_reads_the_reviewers_own_rows(tmp_path: Path, counter: Counter) -> None:
    """`/api/decisions` in bob's queue of a plan hands back his own standing decisions, read through his queue's
    index, never ada's half of the run (before: every row of the store, then filtered)."""
    found = []
    for name, size in (("small", 2_000), ("large", 40_000)):
        run = planned_run(tmp_path / name, size)
        ReviewStore(run).add_all([Decision("c3::x::0", "reject", "old", reviewer="bob", time="2025-01-01T00:00:00Z"),
                                  Decision("c3::x::0", "accept", reviewer="bob"),
                                  Decision(f"c{size - 1}::x::0", "accept", reviewer="bob")])
        found.append(decisions_of(run, counter, "bob"))
    (*small, small_body), (*large, large_body) = found
    assert {key: d["decision"] for key, d in small_body.items()} == {"0/c3::x::0": "accept", "0/c1999::x::0": "accept"}
    assert {key: d["decision"] for key, d in large_body.items()} == {"0/c3::x::0": "accept",
                                                                    "0/c39999::x::0": "accept"}
    assert small == large and large[0] < 100


def test_outside_a_blind_queue_the_decisions_api_reads_the_standing_rows(tmp_path: Path, counter: Counter) -> None:
    """`/api/decisions` in a plain session hands back the standing decision per candidate, read through the
    standing table: a row per decided candidate, not the history (before: every row, here twice the answer). A
    standing row that is no decision (a received store) leaves its candidate to its valid rows, as before."""
    run = disputed_run(tmp_path / "run", 2_000)  # ada and bob decided the first half: 2,000 rows on 1,000
    with sqlite3.connect(run / STORE_FILE) as db:  # a later row that is no decision: it stands in the table
        db.execute("INSERT INTO decisions (id, decision, reviewer, time, role) VALUES ('c10::x::0', 'maybe', 'bob', "
                   "'2027-01-01T00:00:00.000+00:00', 'review')")
    with running([run], reviewer="carol") as server:
        counter.rows = counter.statements = 0
        status, _, body = http(server, "/api/decisions")
        rows = counter.rows
    assert status == 200
    expected = {f"0/{id_}": vars(d) for id_, d in ReviewStore(run).latest().items()}
    assert json.loads(body) == expected and len(expected) == 1_000
    assert rows <= len(expected) + 5  # the standing rows, a count, c10's rows (before: every row, 2,001 and more)
    with sqlite3.connect(run / STORE_FILE) as db:  # the standing row of c20 now names no row: the history is read
        db.execute("DELETE FROM decisions WHERE id = 'c20::x::0' AND reviewer = 'bob'")
    assert ReviewStore(run).standing_decisions() == ReviewStore(run).latest()
