"""The triage routing in headless Chromium (issue 28): the review list opens with the candidates whose signals (the
step audit's algebra, the blind judge, rollouts) disagree with their labels, each showing which ones; the rest
follow, fast-tracked candidates last."""
from __future__ import annotations

from pathlib import Path

import pytest

from test_review import running
from test_review_browser import CHROMIUM, browser  # noqa: F401 - the fixture
from test_review_triage import REVIEW_FIRST, ROUTED, routing_run

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)")


def test_disagreements_come_first_with_their_signals(browser, tmp_path: Path) -> None:  # noqa: F811
    with running([routing_run(tmp_path / "run")], reviewer="playwright") as server:
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(server.url)
        ids = page.eval_on_selector_all("nav.list li a", "links => links.map(a => a.title)")
        assert ids == ROUTED
        marks = page.eval_on_selector_all("nav.list li", "items => items.map(li => [li.querySelector('a').title, "
                                          "(li.querySelector('.route') || {}).textContent || ''])")
        assert {cid: mark for cid, mark in marks if mark} == {cid: f"≠ {s}" for cid, s in REVIEW_FIRST.items()}
        assert page.input_value("#f-order") == "routing"  # the order the list opened with, named
        # the first candidate: algebra and judge disagree, rollouts did not run; its flag sits on its step
        assert page.text_content("#cid") == "t3::counterfactual::0"
        assert page.text_content("#routing .route") == "review first"
        signals = page.eval_on_selector_all("#routing li.signal", "items => items.map(li => li.className)")
        assert signals == ["signal disagree", "signal disagree", "signal silent"]
        assert page.is_visible("#routing li.disagree[data-signal='algebra']")
        assert "false (11)" in page.text_content("tr.step[data-step='1'] .audit-flag")
        # `j` walks the routing's order: the judge and rollouts disagreeing next
        with page.expect_navigation():
            page.keyboard.press("j")
        assert page.text_content("#cid") == "t5::counterfactual::0"
        assert page.eval_on_selector_all("#routing li.disagree", "items => items.map(li => li.dataset.signal)") == [
            "judge", "rollouts"]
        # as written, on request
        with page.expect_navigation():
            page.select_option("#f-order", "file")
        assert page.eval_on_selector_all("nav.list li a", "links => links.map(a => a.title)") == sorted(ROUTED)
