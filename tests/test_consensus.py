"""Adjudication and `inject build --consensus`: a fixture with three reviewers (ann, bo, cy) and an adjudicator
(judy) keeps exactly the candidates that meet each rule; the adjudicator's queue is exactly the disputed ones."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.cli.commands import main
from injector.curate.review.adjudicate import to_adjudication
from injector.curate.review.consensus import parse_rule
from injector.curate.review.server import ReviewServer
from injector.curate.review.session import ReviewSession
from injector.curate.review.store import Decision, ReviewStore
from injector.util.errors import UserError
from test_review import STEPS, candidate, decide, http, make_run

TWO_CHANGED = [STEPS[0], "Her change is $20 - 11 = 8$ dollars.", "So she gets $8$ dollars back.\n\n# Answer\n\n8"]
A, R = "accept", "reject"
VOTES = {  # candidate -> reviewer -> decision ("accept+3": accept with error steps 2 and 3)
    "c0": {"ann": A, "bo": A, "cy": A},
    "c1": {"ann": A, "bo": A, "cy": R},
    "c2": {"ann": R, "bo": R, "cy": A},
    "c3": {"ann": A, "bo": "accept+3", "cy": R},
    "c4": {"ann": A},
    "c5": {"ann": A, "bo": R},
    "c6": {"ann": A, "bo": A, "cy": A},
}
ADJUDICATIONS = {"c5": "accept+3", "c6": R}
DISPUTED = ["c1", "c2", "c3", "c5"]


def _decision(cid: str, vote: str, reviewer: str, role: str = "review") -> Decision:
    if vote == R:
        return Decision(cid, R, reason="not an error", reviewer=reviewer, role=role)
    return Decision(cid, A, corrected_error_steps=[2, 3] if vote == "accept+3" else None, reviewer=reviewer,
                    role=role)


@pytest.fixture
def reviewed(tmp_path: Path) -> Path:
    run = make_run(tmp_path / "run", [candidate(f"{cid}::counterfactual::0", modified=TWO_CHANGED)
                                      for cid in VOTES])
    store = ReviewStore(run)
    store.add_all([_decision(f"{cid}::counterfactual::0", vote, reviewer)
                   for cid, votes in VOTES.items() for reviewer, vote in votes.items()])
    store.add_all([_decision(f"{cid}::counterfactual::0", vote, "judy", "adjudication")
                   for cid, vote in ADJUDICATIONS.items()])
    return run


def built(run: Path, out: Path, *options: str) -> dict[str, list[int]]:
    result = CliRunner().invoke(main, ["build", str(run), "--out", str(out), *options])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for path in sorted((out / "jsonl").glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines()]
    return {row["id"].split("::")[0]: (row["error_steps"], row["reviewer"]) for row in rows}


def test_consensus_2_of_3_keeps_exactly_the_candidates_that_meet_it(reviewed: Path, tmp_path: Path) -> None:
    kept = built(reviewed, tmp_path / "two", "--consensus", "2-of-3")
    assert kept == {"c0": ([2], "ann+bo+cy"), "c1": ([2], "ann+bo"), "c5": ([2, 3], "judy")}  # c5: adjudicated


def test_consensus_adjudicated_keeps_adjudicated_or_unanimous(reviewed: Path, tmp_path: Path) -> None:
    kept = built(reviewed, tmp_path / "adj", "--consensus", "adjudicated")
    assert kept == {"c0": ([2], "ann+bo+cy"), "c5": ([2, 3], "judy")}  # c6 unanimous, but adjudicated: reject


def test_a_rule_that_is_no_majority_is_refused(reviewed: Path, tmp_path: Path) -> None:
    for rule in ("1-of-3", "2-of-4", "3-of-2", "most"):
        with pytest.raises(UserError, match="K a majority of N"):
            parse_rule(rule)
    result = CliRunner().invoke(main, ["build", str(reviewed), "--out", str(tmp_path / "x"), "--consensus",
                                       "1-of-2"])
    assert result.exit_code == 2 and "1-of-2" in result.output


def test_the_adjudicator_sees_exactly_the_disputed_candidates_side_by_side(reviewed: Path) -> None:
    session = ReviewSession([reviewed], "judy")
    to_adjudication(session)
    assert [entry.id.split("::")[0] for entry in session.entries] == DISPUTED
    server = ReviewServer(session)
    import threading

    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        page = http(server, "/?key=0/c3::counterfactual::0")[2]
        assert 'id="queue">adjudication queue of judy' in page
        table = page[page.index('id="reviews"'):page.index("</table>", page.index('id="reviews"'))]
        assert table.count("<tr>") == 4  # header and three reviewers
        assert "<td>ann</td><td>accept</td><td>2</td>" in table and "<td>bo</td><td>accept</td><td>2, 3</td>" in table
        assert "<td>cy</td><td>reject</td>" in table
        # c5 was adjudicated by judy: changing it asks for confirmation like any own decision
        assert decide(server, "c3::counterfactual::0", decision="reject", reason="not an error")[0] == 200
        status, answer = decide(server, "c5::counterfactual::0", decision="reject", reason="unreadable")
        assert status == 409
    finally:
        server.shutdown()
        server.server_close()
    final = ReviewStore(reviewed).latest()["c3::counterfactual::0"]
    assert (final.decision, final.role, final.reviewer) == ("reject", "adjudication", "judy")
