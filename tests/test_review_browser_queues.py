"""Queues in headless Chromium: reviewers of a plan each see their own queue, blind to the others; a gold item
answered wrongly lowers that reviewer's gold accuracy; the adjudicator sees exactly the disputed candidates."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from injector.curate.review.adjudicate import to_adjudication
from injector.curate.review.assign import PLAN_FILE, make_plan, read_plan
from injector.curate.review.gold import gold_scores
from injector.curate.review.server import ReviewServer
from injector.curate.review.session import ReviewSession
from test_consensus import DISPUTED, reviewed  # noqa: F401 - a fixture
from test_review import candidate, cli, make_run, running  # noqa: F401 - cli is a fixture
from test_review_browser import CHROMIUM, browser  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)")
IDS = [f"c{n:02d}::counterfactual::0" for n in range(30)]


def listed(page) -> list[str]:
    return page.eval_on_selector_all("nav.list li a", "links => links.map(a => a.title)")


def reject_here(page) -> None:
    """Reject the candidate shown with a quick reason, by keyboard, and wait for the next one."""
    page.keyboard.press("r")
    page.click("button.quick[data-reason='not an error']")
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")


def test_each_reviewer_sees_their_own_queue_blind_to_the_others(browser, tmp_path: Path) -> None:  # noqa: F811
    run = make_run(tmp_path / "run", [candidate(cid) for cid in IDS])
    plan = make_plan(IDS, ["ann", "bo", "cy"], 2)
    (run / PLAN_FILE).write_text(json.dumps(plan.model_dump()), encoding="utf-8")
    seen = {}
    for name in ("ann", "bo"):
        with running([run], reviewer=name, queue=True) as server:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(server.url)
            seen[name] = listed(page)
            assert page.text_content("#queue") == f"queue of {name}"
            assert page.text_content("#progress").startswith("reviewed 0 / 20")  # ann's reject is not bo's
            reject_here(page)
            page.close()
    assert seen == {"ann": plan.queues["ann"], "bo": plan.queues["bo"]}


def test_a_gold_item_answered_wrongly_lowers_accuracy(browser, cli, tmp_path: Path) -> None:  # noqa: F811
    from click.testing import CliRunner

    from test_review_gold import GOLD

    run = make_run(tmp_path / "run", [candidate(cid) for cid in IDS])
    result = CliRunner().invoke(cli, ["review", str(run), "--reviewers", "ann", "--gold", str(GOLD), "--gold-rate",
                                      "0.1"])
    assert result.exit_code == 0, result.output
    plan = read_plan(run)
    gold_id = next(cid for cid in plan.queues["ann"] if cid in plan.gold)
    with running([run], reviewer="ann", queue=True) as server:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(server.url + f"&key=0/{gold_id}")
        assert page.text_content("#cid") == gold_id
        reject_here(page)  # the gold item is a real error: rejecting it is wrong
    (score,) = gold_scores(run)
    assert (score.answered, score.decision_right, score.flagged) == (1, 0, True)


def test_the_adjudicator_sees_exactly_the_disputed_candidates(browser, reviewed: Path) -> None:  # noqa: F811
    session = ReviewSession([reviewed], "judy")
    to_adjudication(session)
    server = ReviewServer(session)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(server.url)
        assert [cid.split("::")[0] for cid in listed(page)] == DISPUTED
        assert page.locator("#reviews tr").count() == 4  # the header and ann, bo, cy side by side
    finally:
        server.shutdown()
        server.server_close()
