"""The review app's first start on a large run (issue 30: start-up under 2 s at 100k candidates): indexing reads each
line's id, category and step audit without decoding the line when it is written as `inject run` writes it, and
gives every candidate the same routing group the decoded line gives. Counted (lines decoded), never timed."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from injector.curate.review import line_fields, queue_index
from injector.curate.review.routing_order import routing_group
from injector.curate.review.store import STORE_FILE, ReviewStore
from test_review import candidate, make_run

CLEAN = {"steps": 3, "checked_steps": 2, "findings": [], "false_in_error_steps": 0}
FLAG = {"kind": "unlabelled_false_step", "step": 1, "message": "4 * 2.75 = 12 is false"}


def _records() -> list[dict]:
    records = [candidate(f"c{n}::x::0", step_audit={**CLEAN, "false_in_error_steps": n % 3}) for n in range(12)]
    records.append(candidate("flagged::x::0", step_audit={**CLEAN, "findings": [FLAG]}))
    records.append(candidate("nested::x::0", provenance={"engine": "offline", "step_audit": CLEAN}))
    records.append(candidate("none::x::0"))
    return records


def _write(directory: Path, records: list[dict], compact: bool) -> Path:
    make_run(directory, [])
    separators = (",", ":") if compact else (", ", ": ")
    (directory / "candidates.jsonl").write_text(
        "".join(json.dumps(record, separators=separators) + "\n" for record in records), encoding="utf-8")
    return directory


def _groups(directory: Path) -> dict[str, int]:
    with sqlite3.connect(directory / STORE_FILE) as db:
        return dict(db.execute("SELECT id, g_routing FROM queue"))


class _Decoded(queue_index.Facts):
    """Facts that always decode the line (what indexing did for every line with a step audit before)."""

    def ends_at(self, pattern, at):
        return None


def test_clean_step_audits_are_indexed_without_decoding_their_lines(tmp_path, monkeypatch):
    decoded = []
    real = queue_index.loads_bounded
    monkeypatch.setattr(queue_index, "loads_bounded", lambda text: decoded.append(text) or real(text))
    records = _records()
    for compact in (True, False):
        directory = _write(tmp_path / f"run-{compact}", records, compact)
        decoded.clear()
        queue_index.refresh(ReviewStore(directory), directory)
        assert len(decoded) == 2  # the flagged one and the nested one; before: every line naming "step_audit" (14)
        groups = _groups(directory)
        for number, raw in enumerate((directory / "candidates.jsonl").read_bytes().splitlines(keepends=True)):
            record = records[number]
            facts = _Decoded(record["id"], record["category"], queue_index.UNVERIFIED, raw, directory, None)
            assert groups[record["id"]] == routing_group(facts), record["id"]
    assert len(set(groups.values())) >= 2  # the audits said different things: not one group for all


def test_fields_are_read_side_by_side_or_apart_alike():
    names = (b'"id"', b'"category"')
    line = json.dumps({"a": 1, "id": "x\\u00e9\"y", "category": "c"}).encode() + b"\n"
    apart = json.dumps({"id": "x\\u00e9\"y", "b": [1], "category": "c"}).encode() + b"\n"
    assert line_fields.quick_fields(line, names) == line_fields.quick_fields(apart, names) == ('x\\u00e9"y', "c")
    twice = json.dumps({"id": "x", "category": "c", "more": {"id": "z"}}).encode()
    assert line_fields.quick_fields(twice, names) is None  # goes to the decoder


def test_a_new_plan_rebuilds_the_plans_queues_alone(tmp_path, monkeypatch):
    """A plan written after the run was indexed reads no line of the run again (the queue is kept; the plan's
    queues are joined to it in SQLite); a plan naming other gold items, or a changed candidates file, rebuilds
    the queue too."""
    from injector.curate.review.assign import make_plan, write_plan
    from injector.curate.review.plan_queue import PlanQueue
    from injector.curate.review.queue import RunQueue

    directory = _write(tmp_path / "run", _records(), compact=True)
    store = ReviewStore(directory)
    assert queue_index.refresh(store, directory)
    scanned = []
    real = queue_index._rows
    monkeypatch.setattr(queue_index, "_rows", lambda *args: scanned.append(args) or real(*args))
    ids = [record["id"] for record in _records()]
    plan = make_plan(ids, ["ada", "bob"], overlap=1)
    write_plan(directory, plan)
    assert queue_index.refresh(store, directory) and scanned == []  # the plan's queues alone
    queue = PlanQueue(RunQueue(store, 0), "ada")
    assert [entry.id for entry in queue.all()] == plan.queues["ada"]
    assert not queue_index.refresh(store, directory)
    (directory / "review-plan.json").write_text(json.dumps({**plan.model_dump(), "gold": {
        "g1::x::0": {"decision": "reject"}}}), encoding="utf-8")
    assert queue_index.refresh(store, directory) and len(scanned) == 1  # other gold items: the queue too
    with (directory / "candidates.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(candidate("late::x::0")) + "\n")
    assert queue_index.refresh(store, directory) and len(scanned) == 2
    assert [entry.id for entry in PlanQueue(RunQueue(store, 0), "ada").all()] == plan.queues["ada"]


def _python_calls(work) -> int:
    """How many Python functions `work()` calls (each generator resume counts too)."""
    import sys

    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event == "call"
    sys.setprofile(count)
    try:
        work()
    finally:
        sys.setprofile(None)
    return calls


def test_indexing_a_line_costs_a_few_python_calls(tmp_path, monkeypatch):
    """Each line's id, category and clean step audit are read by a handful of calls (before: 21 a line, the
    verdict-only orders keyed on every line); the verdict-only orders are keyed once per verdict."""
    records = [candidate(f"c{n}::x::0", step_audit={**CLEAN, "false_in_error_steps": n % 3}) for n in range(300)]
    directory = _write(tmp_path / "run", records, compact=True)
    keyed = []
    real = queue_index.ORDER_KEYS["verdict"]
    monkeypatch.setitem(queue_index.ORDER_KEYS, "verdict", lambda facts: keyed.append(facts.id) or real(facts))
    rows = list(queue_index._rows(directory, set()))  # the patterns compiled, once per process
    assert len(rows) == 300 and len(keyed) == 1  # one verdict (unverified): keyed once (was 300 times)
    rows.clear()
    calls = _python_calls(lambda: rows.extend(queue_index._rows(directory, set())))
    assert len(rows) == 300 and calls <= 15 * len(rows)  # before: 23 a line
    groups = dict(zip(queue_index._row_columns(), zip(*rows)))
    assert set(groups["g_verdict"]) == {queue_index.verdict_rank(queue_index.UNVERIFIED)}
    assert groups["id"] == tuple(record["id"] for record in records)


def test_a_reviewers_first_start_makes_their_queue_alone(tmp_path):
    """A plan's queues are made one by one, each on its reviewer's first start (before: every reviewer's rows at
    any first start); decisions that arrive before a reviewer's first start are in their queue once it is made."""
    from injector.curate.review.assign import make_plan, write_plan
    from injector.curate.review.session import ReviewSession
    from injector.curate.review.store import Decision

    directory = _write(tmp_path / "run", _records(), compact=True)
    ids = [record["id"] for record in _records()]
    plan = make_plan(ids, ["ada", "bob", "cy"], overlap=2)
    write_plan(directory, plan)
    store = ReviewStore(directory)
    store.add_all([Decision(ids[0], "reject", "wrong", reviewer="bob"), Decision(ids[1], "accept", reviewer="ada")])

    def made() -> dict[str, int]:
        with sqlite3.connect(directory / STORE_FILE) as db:
            return dict(db.execute("SELECT reviewer, count(*) FROM plan_queue GROUP BY reviewer"))
    ReviewSession([directory], reviewer="ada", queue=True)
    assert made() == {"ada": len(plan.queues["ada"])}  # before: ada's, bob's and cy's rows
    mine = [id_ for id_ in plan.queues["bob"] if id_ not in (ids[0], ids[1])][0]
    store.add_all([Decision(mine, "accept", reviewer="bob")])  # an import while bob's queue is still to make
    bob = ReviewSession([directory], reviewer="bob", queue=True)
    assert made() == {"ada": len(plan.queues["ada"]), "bob": len(plan.queues["bob"])}
    expected = {id_: "" for id_ in plan.queues["bob"]} | {mine: "accept"}
    if ids[0] in expected:
        expected[ids[0]] = "reject"
    assert {entry.id: entry.status for entry in bob.runs[0].plan.all()} == expected  # his own, no one else's
    decided = sum(accepted + rejected for _, accepted, rejected in bob.progress().values())
    assert decided == sum(1 for status in expected.values() if status)


def test_a_start_under_a_plan_leaves_the_queues_own_counts_to_their_first_use(tmp_path):
    """The statuses and counts only the queue's own views read are not made at a reviewer's start under a plan
    (before: made at every first start: a status per decided candidate, the counts, every candidate registered);
    a plain start makes them, decisions made meanwhile included, and triggers keep them from then on."""
    from injector.curate.review.assign import make_plan, write_plan
    from injector.curate.review.session import ReviewSession, View
    from injector.curate.review.store import Decision

    directory = _write(tmp_path / "run", _records(), compact=True)
    ids = [record["id"] for record in _records()]
    write_plan(directory, make_plan(ids, ["ada", "bob"], overlap=2))
    store = ReviewStore(directory)
    store.add_all([Decision(ids[0], "reject", "wrong", reviewer="ada")])

    def made() -> list[int]:
        with sqlite3.connect(directory / STORE_FILE) as db:
            return [db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in (
                "queue WHERE status != ''", "queue_tally", "candidates")]
    ReviewSession([directory], reviewer="ada", queue=True)
    assert made() == [0, 0, 0]  # before: [1, 2, 15]
    store.add_all([Decision(ids[1], "accept", reviewer="ada")])  # while they are still to make
    plain = ReviewSession([directory], reviewer="judy")
    assert made()[0] == 2 and made()[2] == len(ids)
    assert plain.progress()["counterfactual"][1:] == [1, 1]
    assert plain.window(View(status="rejected"), None, 0, 5).at(0).id == ids[0]
    store.add_all([Decision(ids[2], "reject", "no", reviewer="bob")])  # kept by the triggers from now on
    assert made()[0] == 3 and ReviewSession([directory]).progress()["counterfactual"][1:] == [1, 2]


def test_an_open_session_makes_again_what_another_start_rebuilt(tmp_path):
    """The files changed and another start rebuilt the index while sessions are open: their next read makes the
    queue's own counts, or the reviewer's queue, again (an open session never shows an empty view for it)."""
    from injector.curate.review.assign import make_plan, write_plan
    from injector.curate.review.session import ReviewSession, View

    directory = _write(tmp_path / "run", _records(), compact=True)
    ids = [record["id"] for record in _records()]
    plan = make_plan(ids, ["ada", "bob"], overlap=1)
    write_plan(directory, plan)
    ada = ReviewSession([directory], reviewer="ada", queue=True)
    plain = ReviewSession([directory], reviewer="judy")
    assert plain.runs[0].queue.total(View()) == len(ids)
    with (directory / "candidates.jsonl").open("a", encoding="utf-8") as out:
        out.write(json.dumps(candidate("late::x::0")) + "\n")
    assert queue_index.refresh(ReviewStore(directory), directory)  # another start: every table made again
    assert plain.runs[0].queue.total(View()) == len(ids) + 1
    assert [entry.id for entry in ada.runs[0].plan.all()] == plan.queues["ada"]
