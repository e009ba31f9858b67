"""The review app's first start on a large run (issue 30: start-up under 2 s at 100k candidates): indexing reads each
line's id, category and step audit without decoding the line when it is written as `inject run` writes it, and
gives every candidate the same routing group the decoded line gives. Counted (lines decoded), never timed."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from injector.curate.review import queue_index
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
    assert queue_index._quick_fields(line, names) == queue_index._quick_fields(apart, names) == ('x\\u00e9"y', "c")
    twice = json.dumps({"id": "x", "category": "c", "more": {"id": "z"}}).encode()
    assert queue_index._quick_fields(twice, names) is None  # goes to the decoder


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
