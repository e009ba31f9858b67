"""`inject review` in headless Chromium: keyboard review of a few candidates, then a reload finds every decision.

Needs /usr/bin/chromium (Debian's package; .ci/run installs it) and the playwright package (test extras).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from injector.review.store import ReviewStore
from test_review import HOSTILE_SCRIPT, make_run, running

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent / "artifacts"

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install chromium)")
playwright_api = pytest.importorskip("playwright.sync_api", reason="needs playwright (pip install -e '.[test]')")


@pytest.fixture
def browser():
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--no-proxy-server"])
        try:
            yield browser
        finally:
            browser.close()


def test_review_in_a_browser(browser, tmp_path: Path) -> None:
    run_dir = make_run(tmp_path / "run")
    with running([run_dir], reviewer="playwright") as server:
        origin = f"http://127.0.0.1:{server.port}"
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        requests: list[str] = []
        dialogs: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(server.url)
        assert page.url == origin + "/"  # the token moved to a cookie, out of the address bar
        assert page.text_content("#cid") == "t1::counterfactual::0"

        # accept the first with `a`: the page moves on to the second
        with page.expect_navigation():
            page.keyboard.press("a")
        assert page.text_content("#cid") == "t2::counterfactual::0"

        # reject the second with `r`, a quick reason and Ctrl+Enter
        page.keyboard.press("r")
        page.click("button.quick[data-reason='not an error']")
        with page.expect_navigation():
            page.keyboard.press("Control+Enter")
        assert page.text_content("#cid") == "t3::counterfactual::0"

        # correct the third's error steps with `e`: a bad correction is refused with the rule's message ...
        page.keyboard.press("e")
        page.check(".err-box[value='1']")
        page.click("#correct-save")
        page.wait_for_function("document.getElementById('message').className === 'bad'")
        assert "error_on_unchanged_step" in page.text_content("#message")
        # ... and a good one (steps 2 and 3 were both changed) is saved
        page.uncheck(".err-box[value='1']")
        page.check(".err-box[value='3']")
        with page.expect_navigation():
            page.click("#correct-save")
        assert page.text_content("#cid") == "t4::missing_condition::0"

        # edit the fourth's step 1 (missing_condition may keep its error on an unchanged step)
        page.keyboard.press("e")
        page.click(".edit-btn[data-step='1']")
        page.fill("textarea.edit-text[data-step='1']", "Four notebooks cost $4 \\cdot 2.75 = 11$ dollars.")
        with page.expect_navigation():
            page.click("#correct-save")
        assert page.text_content("#cid") == "t5::redundancy::0"

        # skip with `s` (nothing written), back with `k`
        with page.expect_navigation():
            page.keyboard.press("s")
        assert page.text_content("#cid") == "t6::counterfactual::0"
        with page.expect_navigation():
            page.keyboard.press("k")
        assert page.text_content("#cid") == "t5::redundancy::0"

        # hostile text is shown as text and never runs
        assert HOSTILE_SCRIPT in page.text_content("tr.step[data-step='2'] td.mod")
        assert HOSTILE_SCRIPT in page.text_content("#question .text")
        assert page.locator("main img").count() == 0 and dialogs == []

        # after a reload, the decisions are on the page
        page.goto(f"{origin}/")
        page.reload()
        assert page.get_attribute("nav.list li:nth-child(1)", "class") == "accepted"
        assert page.get_attribute("nav.list li:nth-child(2)", "class") == "rejected"
        assert page.get_attribute("nav.list li:nth-child(3)", "class") == "accepted"
        assert page.get_attribute("nav.list li:nth-child(5)", "class") == "unreviewed"
        assert page.text_content("#progress").startswith("reviewed 4 / 6 (accepted 3, rejected 1)")
        assert page.text_content("#status").startswith("accepted (playwright, ")
        page.click("nav.list li:nth-child(2) a")
        assert page.text_content("#status").startswith("rejected; reason: not an error (playwright, ")
        page.goto(f"{origin}/?status=accepted&cat=counterfactual")
        page.click("nav.list li:nth-child(2) a")
        assert page.text_content("#cid") == "t3::counterfactual::0"
        assert page.text_content("#status").startswith("accepted; error steps corrected to 2, 3")
        assert page.locator("tr.step.error").count() == 2
        # `a` on a corrected candidate accepts it as shown, keeping the corrections
        with page.expect_navigation():
            page.keyboard.press("a")

        screenshot = tmp_path / "review.png"
        page.screenshot(path=str(screenshot), full_page=True)
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(screenshot, ARTIFACTS / "review.png")
        # the page asked nothing of anyone but its own server
        assert requests and all(url.startswith(origin + "/") for url in requests), requests

    latest = ReviewStore(run_dir).latest()
    assert {cid: d.decision for cid, d in latest.items()} == {
        "t1::counterfactual::0": "accept", "t2::counterfactual::0": "reject", "t3::counterfactual::0": "accept",
        "t4::missing_condition::0": "accept"}
    assert latest["t2::counterfactual::0"].reason == "not an error"
    assert latest["t3::counterfactual::0"].corrected_error_steps == [2, 3]
    assert latest["t3::counterfactual::0"].edited_steps is None  # untouched text boxes are no edits
    assert len(ReviewStore(run_dir).history("t3::counterfactual::0")) == 2
    assert latest["t4::missing_condition::0"].edited_steps == {
        1: "Four notebooks cost $4 \\cdot 2.75 = 11$ dollars."}
    assert latest["t4::missing_condition::0"].corrected_error_steps is None
    assert all(d.reviewer == "playwright" for d in latest.values())
