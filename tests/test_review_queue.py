"""The review queue's index (`queue_index.py`, `queue.py`, `views.py`): a view's window read off SQLite indexes is
the list the app used to build in memory; the index follows the files and is never trusted beyond them."""
from __future__ import annotations

import json
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.cli.commands import main
from injector.triage.verdicts import verdict_rank
from injector.util.errors import UserError
from injector.curate.review import queue_index
from injector.curate.review.session import ReviewSession, View
from injector.curate.review.store import STORE_FILE, Decision, ReviewStore
from test_review import candidate, decide, http, make_run, running

VERDICTS = ("confirmed", "missed", "flagged")


def random_run(directory: Path, seed: int, size: int = 40) -> Path:
    """`size` candidates of two categories, most with a verdict, some decided (accept / reject)."""
    rng = random.Random(seed)
    records = [candidate(f"r{seed}c{n}::x::0", rng.choice(["counterfactual", "redundancy"])) for n in range(size)]
    make_run(directory, records)
    verdicts = [{"id": record["id"], "verdict": rng.choice(VERDICTS)} for record in records if rng.random() < 0.8]
    (directory / "verify.jsonl").write_text("".join(json.dumps(v) + "\n" for v in verdicts), encoding="utf-8")
    decisions = [Decision(record["id"], rng.choice(["accept", "reject"]), "no", reviewer="ann")
                 for record in records if rng.random() < 0.5]
    ReviewStore(directory).add_all(decisions)
    return directory


def reference(session: ReviewSession, view: View) -> list[str]:
    """The view's keys as the app listed them before the index: filters, then a stable sort by the order's group."""
    rows = []
    for number, run in enumerate(session.runs):
        decided = run.store.decided()
        verdicts = {json.loads(line)["id"]: json.loads(line)["verdict"]
                    for line in (run.path / "verify.jsonl").read_text().splitlines()}
        for record in map(json.loads, (run.path / "candidates.jsonl").read_text().splitlines()):
            verdict = verdicts.get(record["id"], "unverified")
            status = {"accept": "accepted", "reject": "rejected"}.get(decided.get(record["id"], ""), "unreviewed")
            if ((view.cat and record["category"] != view.cat) or (view.verdict and verdict != view.verdict)
                    or (view.status and status != view.status)):
                continue
            group = verdict_rank(verdict) if session.order(view) == "verdict" else 0
            rows.append((group, number, f"{number}/{record['id']}"))
    return [key for _, _, key in sorted(rows, key=lambda row: row[:2])]  # stable: file order within a group


def test_every_view_window_is_the_list_the_app_built(tmp_path: Path) -> None:
    session = ReviewSession([random_run(tmp_path / "a", 1), random_run(tmp_path / "b", 2)], "bob")
    rng = random.Random(0)
    for cat in ("", "redundancy"):
        for status in ("", "unreviewed", "rejected"):
            for verdict in ("", "missed", "unverified"):
                for order in ("file", "verdict"):
                    view = View(cat, status, verdict, order)
                    keys = reference(session, view)
                    for key in [*rng.sample(keys, min(3, len(keys))), "0/absent"]:
                        window = session.window(view, key, 4, 4)
                        at = keys.index(key) if key in keys else 0
                        assert [e.key for e in window.entries] == keys[max(0, at - (4 if key in keys else 0)):at + 5]
                        assert (window.position, window.total, window.found) == (at, len(keys), key in keys), view


def test_the_index_follows_the_file_and_is_kept_while_it_does_not_change(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run ?#%", [candidate(f"c{n}::x::0") for n in range(3)])  # no URI trips on it
    store = ReviewStore(run)
    assert queue_index.refresh(store, run) is True
    assert queue_index.refresh(store, run) is False  # unchanged: the stored index is used as it is
    with (run / "candidates.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(candidate("c3::x::0", "redundancy")) + "\n")
    session = ReviewSession([run], "bob")  # appended to: indexed again
    assert [e.id for e in session.entries] == [f"c{n}::x::0" for n in range(4)]
    assert session.categories() == ["counterfactual", "redundancy"]


def test_an_index_received_with_a_run_directory_is_rebuilt(tmp_path: Path) -> None:
    """A store copied with its run directory (here forged to list a candidate under another category) carries the
    sender's signature; the receiver's files have their own inodes, so the index is built again from them."""
    sent = make_run(tmp_path / "sent", [candidate("c0::x::0")])
    queue_index.refresh(ReviewStore(sent), sent)
    with sqlite3.connect(sent / STORE_FILE) as db:
        db.execute("UPDATE queue SET category = 'forged'")
    received = tmp_path / "received"
    shutil.copytree(sent, received)  # copy2: same sizes and times
    assert queue_index.refresh(ReviewStore(received), received) is True
    assert ReviewSession([received], "bob").categories() == ["counterfactual"]


def test_a_row_pointing_at_another_line_shows_no_wrong_candidate(tmp_path: Path) -> None:
    """A row whose offset names another line (a store forged in place) is caught when the record is read: its id
    is checked, so the page and a decision never work on a candidate the list did not name."""
    run = make_run(tmp_path / "run", [candidate("c0::x::0"), candidate("c1::x::0")])
    session = ReviewSession([run], "bob")
    second = session.by_key["0/c1::x::0"].offset
    with sqlite3.connect(run / STORE_FILE) as db:
        db.execute("UPDATE queue SET offset = ? WHERE id = 'c0::x::0'", (second,))
    with pytest.raises(UserError, match="holds 'c1::x::0', not the candidate 'c0::x::0'"):
        session.candidate(session.by_key["0/c0::x::0"])


def test_a_line_that_is_no_candidate_is_shown_as_such_and_never_decided(tmp_path: Path) -> None:
    """Validated when shown: a line with an id and a category but no valid candidate is listed, its page says
    FILE:LINE and why, and a decision on it is refused; the others are reviewed as ever."""
    broken = {**candidate("c1::x::0"), "modified_process": "not a list"}
    run = make_run(tmp_path / "run", [candidate("c0::x::0"), broken, candidate("c2::x::0")])
    with running([run], reviewer="bob") as server:
        status, _, body = http(server, "/?key=0/c1::x::0")
        assert status == 200 and 'id="not-a-candidate"' in body
        assert f"{run / 'candidates.jsonl'}:2: not a candidate record (modified_process" in body
        status, answer = decide(server, "c1::x::0", decision="accept")
        assert status == 422 and "not a candidate record" in answer["error"]
        assert decide(server, "c2::x::0", decision="accept")[0] == 200
    result = CliRunner().invoke(main, ["build", str(run), "--out", str(tmp_path / "split")])
    assert result.exit_code == 2 and f"{run / 'candidates.jsonl'}:2" in result.output  # build validates them all


def test_an_order_is_pluggable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An order added to ORDER_KEYS is indexed (the index is rebuilt once for it) and served like the others."""
    monkeypatch.setitem(queue_index.ORDER_KEYS, "redundancy_first",
                        lambda facts: 0 if facts.category == "redundancy" else 1)
    records = [candidate(f"c{n}::x::0", "redundancy" if n % 3 == 0 else "counterfactual") for n in range(7)]
    session = ReviewSession([make_run(tmp_path / "run", records)], "bob")
    window = session.window(View(order="redundancy_first"), None, 0, 10)
    assert [e.id.split("::")[0] for e in window.entries] == ["c0", "c3", "c6", "c1", "c2", "c4", "c5"]


def test_build_indexes_no_queue(tmp_path: Path) -> None:
    """`build` reads every record itself: it opens the store for its decisions and indexes nothing."""
    run = make_run(tmp_path / "run", [candidate("c0::x::0")])
    ReviewStore(run).add_all([Decision("c0::x::0", "accept", reviewer="ann")])
    result = CliRunner().invoke(main, ["build", str(run), "--out", str(tmp_path / "split")])
    assert result.exit_code == 0, result.output
    with sqlite3.connect(run / STORE_FILE) as db:
        assert db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'queue'").fetchone() == (0,)
