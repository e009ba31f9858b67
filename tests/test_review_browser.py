"""`inject review` in headless Chromium: keyboard review of a few candidates, then a reload finds every decision.

Needs /usr/bin/chromium (Debian's package; .ci/run installs it) and the playwright package (test extras).
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from injector.curate.review.store import ReviewStore
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
        # an alert would be hostile text running; a confirm is the page asking before a decision is replaced
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message),
                                          dialog.accept() if dialog.type == "confirm" else dialog.dismiss()))
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
        # `a` on a corrected candidate accepts it as shown, keeping the corrections, once the reviewer confirms
        with page.expect_navigation():
            page.keyboard.press("a")
        assert len(dialogs) == 1 and "Replace your decision?" in dialogs[0]

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


def test_triage_order_and_typeset_math_in_a_browser(browser, tmp_path: Path) -> None:
    """A verified run: the list puts the likeliest bad candidates first, the verdict filter narrows it, and math is
    typeset by the vendored KaTeX (a formula it cannot parse stays as written; the toggle shows the source)."""
    from test_review import STEPS, candidate, sample_candidates
    from test_review_triage import BY_VERDICT, write_verdicts

    # formulas KaTeX cannot typeset: a double superscript, and an unclosed brace (auto-render then sees no formula)
    invalid, unclosed = "Her change is $20 - 11 = 8^2^2$ dollars.", "So $\\frac{8$ dollars back."
    records = [*sample_candidates(), candidate("t7::counterfactual::0", modified=[STEPS[0], invalid, unclosed])]
    run_dir = write_verdicts(make_run(tmp_path / "run", records))
    with running([run_dir], reviewer="playwright") as server:
        origin = f"http://127.0.0.1:{server.port}"
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        requests: list[str] = []
        problems: list[str] = []
        page.on("request", lambda request: requests.append(request.url))
        page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.goto(server.url)

        # sorted by the routing: the judge disagreeing (missed, original_flagged, disputed, late), the unverified,
        # then the confirmed (fast-tracked)
        ids = page.eval_on_selector_all("nav.list li a", "links => links.map(a => a.title)")
        assert ids == [*BY_VERDICT[:4], "t6::counterfactual::0", "t7::counterfactual::0", "t1::counterfactual::0"]
        assert page.text_content("#cid") == "t3::counterfactual::0"
        assert page.text_content("#triage .verdict") == "missed"
        assert "judged missed" in page.text_content("#triage")
        # `j` walks the list in that order
        with page.expect_navigation():
            page.keyboard.press("j")
        assert page.text_content("#cid") == "t4::missing_condition::0"
        # the verdict filter narrows the list to one verdict, the order select restores file order
        with page.expect_navigation():
            page.select_option("#f-verdict", "confirmed")
        assert page.eval_on_selector_all("nav.list li a", "ls => ls.map(a => a.title)") == ["t1::counterfactual::0"]
        with page.expect_navigation():
            page.select_option("#f-verdict", "")
        with page.expect_navigation():
            page.select_option("#f-order", "file")
        assert page.text_content("#cid") == "t1::counterfactual::0"

        # math is typeset, the changed formula inside the difference's highlight (t3: the judge missed its error)
        page.goto(f"{origin}/?key=0/t3::counterfactual::0")
        assert page.locator("#question .tex-shown .katex").count() == 2
        row = "tr.step[data-step='2']"
        assert page.locator(f"{row} td.mod ins .katex").count() == 1
        assert page.locator(f"{row} td.orig del .katex").count() == 1
        assert page.is_visible(f"{row} td.mod .tex-shown") and not page.is_visible(f"{row} td.mod .tex-source")
        screenshot = tmp_path / "review-math.png"
        page.screenshot(path=str(screenshot), full_page=True)
        ARTIFACTS.mkdir(exist_ok=True)
        shutil.copy(screenshot, ARTIFACTS / "review-math.png")
        # the toggle (button or `t`) shows the source as written, which a correction edits; it stays on
        page.keyboard.press("t")
        assert page.is_visible(f"{row} td.mod .tex-source") and not page.is_visible(f"{row} td.mod .tex-shown")
        assert page.inner_text(f"{row} td.mod") == "Her change is $20 - 11 = 8$ dollars."
        page.reload()
        assert page.is_visible(f"{row} td.mod .tex-source")
        page.click("#math-toggle")
        assert page.is_visible(f"{row} td.mod .tex-shown")

        # a formula KaTeX cannot parse stays as written, and the rest of the page is typeset
        page.goto(f"{origin}/?key=0/t7::counterfactual::0")
        assert page.inner_text(f"{row} td.mod .katex-error") == "20 - 11 = 8^2^2"
        assert page.locator(f"{row} td.mod .katex").count() == 0
        assert page.inner_text("tr.step[data-step='3'] td.mod .tex-shown") == "So $\\frac{8$ dollars back."
        assert page.locator("tr.step[data-step='1'] td.mod .katex").count() == 1

        assert problems == []  # no script error, no refusal by the Content-Security-Policy
        assert requests and all(url.startswith(origin + "/") for url in requests), requests
        assert any(url.endswith(".woff2") for url in requests)  # the fonts came from the app itself
