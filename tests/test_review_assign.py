"""`inject review --reviewers ... --overlap N`: a balanced, seeded plan; each reviewer sees only their queue, blind to
the others' decisions; per-reviewer export and import (twice changes nothing)."""
from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.curate.review.assign import PLAN_FILE, make_plan, read_plan
from injector.curate.review.store import Decision, ReviewStore, latest_per_reviewer
from injector.util.errors import UserError
from test_review import candidate, cli, decide, http, make_run, running  # noqa: F401 - cli is a fixture

IDS = [f"c{n:02d}::counterfactual::0" for n in range(30)]


def thirty(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run", [candidate(cid) for cid in IDS])


def test_a_plan_is_balanced_and_fixed_by_its_seed() -> None:
    plan = make_plan(IDS, ["ann", "bo", "cy"], 2, seed=7)
    assert {name: len(queue) for name, queue in plan.queues.items()} == {"ann": 20, "bo": 20, "cy": 20}
    assert all(sum(cid in queue for queue in plan.queues.values()) == 2 for cid in IDS)
    assert {len(set(plan.queues[a]) & set(plan.queues[b])) for a, b in combinations(plan.reviewers, 2)} == {10}
    assert all(queue == [cid for cid in IDS if cid in queue] for queue in plan.queues.values())  # file order
    assert make_plan(IDS, ["ann", "bo", "cy"], 2, seed=7) == plan
    assert make_plan(IDS, ["ann", "bo", "cy"], 2, seed=8) != plan
    uneven = make_plan(IDS[:7], ["ann", "bo", "cy"], 2)
    assert sorted(map(len, uneven.queues.values())) == [4, 5, 5]
    with pytest.raises(UserError, match="--overlap 4"):
        make_plan(IDS, ["ann", "bo", "cy"], 4)


def test_the_plan_command_writes_the_plan_and_refuses_a_different_one(cli, tmp_path: Path) -> None:
    run = thirty(tmp_path)
    result = CliRunner().invoke(cli, ["review", str(run), "--reviewers", "ann,bo,cy", "--overlap", "2"])
    assert result.exit_code == 0, result.output
    assert "30 candidates, each to 2 of 3 reviewers (ann 20, bo 20, cy 20)" in result.output
    assert read_plan(run) == make_plan(IDS, ["ann", "bo", "cy"], 2)
    again = CliRunner().invoke(cli, ["review", str(run), "--reviewers", "ann,bo,cy", "--overlap", "2"])
    assert again.exit_code == 0  # the same plan: nothing changes
    other = CliRunner().invoke(cli, ["review", str(run), "--reviewers", "ann,bo", "--overlap", "2"])
    assert other.exit_code == 2 and "a different review plan exists" in other.output
    bad = CliRunner().invoke(cli, ["review", str(run), "--reviewers", "ann,,bo"])
    assert bad.exit_code == 2 and "separated by commas" in bad.output


def test_each_reviewer_sees_only_their_queue_blind_to_the_others(tmp_path: Path) -> None:
    run = thirty(tmp_path)
    plan = make_plan(IDS, ["ann", "bo", "cy"], 2)
    (run / PLAN_FILE).write_text(json.dumps(plan.model_dump()), encoding="utf-8")
    shared = next(cid for cid in plan.queues["ann"] if cid in plan.queues["bo"])
    with running([run], reviewer="bo", queue=True) as server:
        assert decide(server, shared, decision="reject", reason="not an error")[0] == 200
    with running([run], reviewer="ann", queue=True) as server:
        page = http(server, "/")[2]
        listed = [cid for cid in IDS if f'title="{cid}"' in page]
        assert listed == plan.queues["ann"] and 'id="queue">queue of ann' in page
        assert "reviewed 0 / 20" in page  # bo's decision is not shown to ann
        decisions = json.loads(http(server, "/api/decisions")[2])
        assert decisions == {}
        shown = http(server, f"/?key=0/{shared}")[2]
        assert 'id="status">unreviewed' in shown and "<p>none yet</p>" in shown and "(bo," not in shown
        assert decide(server, shared, decision="accept")[0] == 200  # no confirmation: bo's is not ann's own
        outside = next(cid for cid in IDS if cid not in plan.queues["ann"])
        assert decide(server, outside, decision="accept")[0] == 422  # not in ann's queue
    assert {name: d.decision for name, d in latest_per_reviewer(ReviewStore(run).rows())[shared].items()} == {
        "ann": "accept", "bo": "reject"}


def test_a_name_without_a_queue_is_told_the_names(tmp_path: Path) -> None:
    run = thirty(tmp_path)
    (run / PLAN_FILE).write_text(json.dumps(make_plan(IDS, ["ann", "bo"], 1).model_dump()), encoding="utf-8")
    from injector.curate.review.server import make_server

    with pytest.raises(UserError, match="one of: ann, bo"):
        make_server([run], reviewer="dee", queue=True)


def test_per_reviewer_export_and_import_twice_changes_nothing(cli, tmp_path: Path) -> None:
    run = thirty(tmp_path)
    store = ReviewStore(run)
    store.record(Decision(IDS[0], "accept", reviewer="ann"))
    store.record(Decision(IDS[0], "reject", reason="unreadable", reviewer="bo"))
    exported = tmp_path / "ann.jsonl"
    result = CliRunner().invoke(cli, ["review", str(run), "--reviewer", "ann", "--export", str(exported)])
    assert result.exit_code == 0 and "1 decisions written (by ann)" in result.output
    copy = thirty(tmp_path / "copy")
    for _ in range(2):
        assert CliRunner().invoke(cli, ["review", str(copy), "--import", str(exported)]).exit_code == 0
    assert [(d.id, d.reviewer) for d in ReviewStore(copy).rows()] == [(IDS[0], "ann")]
