"""The review app with triage verdicts (`verify.jsonl`) and typeset math (vendored KaTeX), over real HTTP."""
from __future__ import annotations

import json
import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from injector.curate.review.assets import KATEX_ERROR_STYLE_HASH, STATIC_DIR
from test_review import _OPENER, candidate, decide, http, make_run, running

REPO = Path(__file__).parent.parent

# Every candidate of `test_review.sample_candidates`, with a verdict unlike file order (t6 is left unverified).
VERDICTS = {"t1::counterfactual::0": "confirmed", "t2::counterfactual::0": "late",
            "t3::counterfactual::0": "missed", "t4::missing_condition::0": "original_flagged",
            "t5::redundancy::0": "disputed"}
BY_VERDICT = ["t3::counterfactual::0", "t4::missing_condition::0", "t5::redundancy::0", "t2::counterfactual::0",
              "t1::counterfactual::0", "t6::counterfactual::0"]
BY_ROUTING = [*BY_VERDICT[:4], "t6::counterfactual::0", "t1::counterfactual::0"]
"""The default order (triage routing): the judge disagreeing first (by verdict), then unverified, then confirmed."""


def verify_line(cid: str, verdict: str, reason: str = "", original_reason: str = "") -> str:
    """One `verify.jsonl` line as `inject verify` writes it (schema: injector/triage/verdicts.py)."""
    category = cid.split("::")[1]
    kind = "redundancy" if category == "redundancy" else "error"
    return json.dumps({
        "id": cid, "category": category, "trajectory_id": cid.split("::")[0], "verdict": verdict, "kind": kind,
        "declared_first_error": 2,
        "judge_modified": {"first_error_step": -1 if verdict == "missed" else 2,
                           "reason": reason or f"judged {verdict}"},
        "judge_original": {"first_error_step": 1 if verdict == "original_flagged" else -1,
                           "reason": original_reason},
        "votes": [2, 3] if verdict == "disputed" else [2], "usage": {"prompt_tokens": 100, "completion_tokens": 20},
    })


def write_verdicts(run_dir: Path, verdicts: dict[str, str] = VERDICTS) -> Path:
    (run_dir / "verify.jsonl").write_text("".join(verify_line(cid, v) + "\n" for cid, v in verdicts.items()),
                                          encoding="utf-8")
    return run_dir


def listed(html: str) -> list[str]:
    """The candidate ids of the page's navigation list, in order."""
    return re.findall(r'<li class="\w+" data-verdict="[\w]+">(?:<span[^>]*>[^<]*</span> )*<a [^>]*title="([^"]+)"',
                      html)


@pytest.fixture
def verified_run(tmp_path: Path) -> Path:
    return write_verdicts(make_run(tmp_path / "run"))


def test_verdicts_sort_the_list_and_show_with_the_judges_reason(verified_run: Path) -> None:
    with running([verified_run]) as server:
        assert listed(http(server, "/?order=verdict")[2]) == BY_VERDICT  # missed, ..., confirmed, unverified
        html = http(server, "/")[2]
        assert listed(html) == BY_ROUTING  # by default the routing: a confirmed verdict is fast-tracked, last
        assert 'data-key="0/t3::counterfactual::0"' in html  # the first of the view is the likeliest bad one
        assert '<span class="verdict v-missed"' in html and "judged missed" in html
        assert "on the modified solution: none (-1); declared first error: step 2" in html
        html = http(server, "/?key=0/t4::missing_condition::0")[2]
        assert "on the original: step 1" in html
        html = http(server, "/?key=0/t5::redundancy::0")[2]
        assert "votes: 2, 3" in html
        html = http(server, "/?key=0/t6::counterfactual::0")[2]
        assert 'id="triage"' not in html  # an unverified candidate has no judge section
        # as written, on request
        assert listed(http(server, "/?order=file")[2]) == sorted(BY_VERDICT)


def test_filter_by_verdict_and_the_next_candidate_keeps_the_view(verified_run: Path) -> None:
    with running([verified_run]) as server:
        html = http(server, "/?verdict=missed")[2]
        assert listed(html) == ["t3::counterfactual::0"] and "1 of 1 in this view" in html
        assert listed(http(server, "/?verdict=unverified")[2]) == ["t6::counterfactual::0"]
        html = http(server, "/")[2]
        options = re.search(r'<select name="verdict" id="f-verdict">(.*?)</select>', html).group(1)
        assert re.findall(r'value="(\w*)"', options) == [
            "", "missed", "original_flagged", "disputed", "late", "confirmed", "unverified"]
        # the answer to a decision names the next candidate of the same view, in its order
        status, answer = decide(server, "t4::missing_condition::0", decision="accept", status="unreviewed")
        assert status == 200 and answer["next"] == "/?key=0%2Ft5%3A%3Aredundancy%3A%3A0&status=unreviewed"
        status, answer = decide(server, "t2::counterfactual::0", decision="accept", order="file", verdict="late")
        assert answer["next"] == "/?key=0%2Ft2%3A%3Acounterfactual%3A%3A0&verdict=late&order=file"


def test_an_unverified_run_keeps_file_order_and_shows_no_triage(tmp_path: Path) -> None:
    with running([make_run(tmp_path / "run")]) as server:
        html = http(server, "/")[2]
        assert listed(html) == sorted(BY_VERDICT)
        assert 'id="f-verdict"' not in html and 'class="verdict' not in html


def test_a_bad_verify_line_is_skipped_and_the_rest_used(verified_run: Path, caplog) -> None:
    with (verified_run / "verify.jsonl").open("a") as handle:
        handle.write('{"id": "t6::counterfactual::0", "verdict": "made-up"}\n')
    with running([verified_run]) as server:
        assert listed(http(server, "/?order=verdict")[2]) == BY_VERDICT
    assert "verify.jsonl:6: not a verify record" in caplog.text


def test_katex_is_served_by_the_app_itself(verified_run: Path) -> None:
    with running([verified_run]) as server:
        status, headers, html = http(server, "/")
        policy = headers["Content-Security-Policy"]
        # nothing but this origin: every source is 'none', 'self', the page's nonce, or the hash of the one style
        # attribute KaTeX writes (a formula it cannot parse, in red)
        sources = {word for directive in policy.split(";") for word in directive.split()[1:]}
        allowed = ("'none'", "'self'", "'unsafe-hashes'", KATEX_ERROR_STYLE_HASH)
        assert all(s in allowed or s.startswith("'nonce-") for s in sources), policy
        assert KATEX_ERROR_STYLE_HASH == "'sha256-+gNyvv+rLRDX3HnJP17znf0KAZ2ku3cXS+cv6c2WLXo='"  # of color:#a11
        assert "font-src 'self'" in policy
        assert '<link rel="stylesheet" href="/static/katex/katex.min.css" nonce=' in html
        status, headers, css = http(server, "/static/katex/katex.min.css")
        assert status == 200 and headers["Content-Type"] == "text/css; charset=utf-8"
        fonts = re.findall(r"url\(([^)]+)\)", css)
        assert len(fonts) == 20 and all(font.endswith(".woff2") for font in fonts)
        for font in fonts:  # every font the stylesheet names is there, as vendored
            url = f"http://127.0.0.1:{server.port}/static/katex/{font}?token={server.token}"
            with _OPENER.open(url, timeout=10) as response:
                assert response.headers["Content-Type"] == "font/woff2"
                assert response.read() == (STATIC_DIR / "katex" / font).read_bytes()
        status, headers, script = http(server, "/static/katex/katex.min.js")
        assert status == 200 and headers["Content-Type"] == "text/javascript; charset=utf-8"
        assert 'version:"0.19.1"' in script
        assert http(server, "/static/katex/auto-render.min.js")[0] == 200
        # only the vendored files, by exact name, and only with the token
        for path in ("/static/katex/LICENSE", "/static/katex/../session.py", "/static/katex/%2e%2e/session.py",
                     "/static/../../pyproject.toml", "/static/katex/fonts/nothing.woff2"):
            assert http(server, path)[0] == 404, path
        assert http(server, "/static/katex/katex.min.css", token=False)[0] == 403


def test_katex_ships_in_the_wheel_with_its_licence() -> None:
    """Every vendored file matches the package data globs, so `pip install` carries it."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    globs = config["injector.curate.review"]
    files = [p.relative_to(STATIC_DIR.parent).as_posix() for p in STATIC_DIR.rglob("*") if p.is_file()]
    assert len(files) == 25 and "static/katex/LICENSE" in files
    unshipped = [f for f in files if not any(fnmatch(f, g) for g in globs)]
    assert unshipped == []
    assert "MIT" in (STATIC_DIR / "katex" / "LICENSE").read_text()


def audited(cid: str, flag_step: int | None = None) -> dict:
    """A candidate with the step audit `inject run` records: a false relation flagged on `flag_step`, or clean."""
    findings = [] if flag_step is None else [{
        "kind": "unlabelled_false_step", "step": flag_step, "relation": "4 \\cdot 2.75 = 12", "written_value": "12",
        "true_value": "11", "message": f"step {flag_step} asserts 4 \\cdot 2.75 = 12, which is false (11)"}]
    return candidate(cid, step_audit={"steps": 3, "checked_steps": 2, "findings": findings})


# t1 all agree; t2 algebra alone disagrees; t3 algebra and judge; t4 algebra against a confirming judge; t5 judge
# and rollouts; t6 rollouts alone (never routes alone); t7 nothing speaks.
ROUTING_RUN = {"t1::counterfactual::0": (None, "confirmed", None), "t2::counterfactual::0": (1, None, None),
               "t3::counterfactual::0": (1, "missed", None), "t4::counterfactual::0": (3, "confirmed", None),
               "t5::counterfactual::0": (None, "late", (0.9, 0.8)), "t6::counterfactual::0": (None, "confirmed",
                                                                                             (0.9, 0.9)),
               "t7::counterfactual::0": (None, None, None)}
REVIEW_FIRST = {"t3::counterfactual::0": "algebra, judge", "t5::counterfactual::0": "judge, rollouts",
                "t4::counterfactual::0": "algebra", "t2::counterfactual::0": "algebra"}
"""The candidates the routing sends to review first, in the list's order (by verdict within), and what disagrees."""
ROUTED = [*REVIEW_FIRST, "t6::counterfactual::0", "t7::counterfactual::0", "t1::counterfactual::0"]


def routing_run(directory: Path) -> Path:
    """A run whose candidates' three signals (step audit, blind judge, rollouts) agree or disagree as ROUTING_RUN."""
    make_run(directory, [audited(cid, flag) for cid, (flag, _, _) in ROUTING_RUN.items()])
    lines = []
    for cid, (_, verdict, rollouts) in ROUTING_RUN.items():
        if verdict is not None:
            record = json.loads(verify_line(cid, verdict))
            if rollouts is not None:
                record["mc"] = {"n": 10, "before": rollouts[0], "through": rollouts[1]}
            lines.append(json.dumps(record) + "\n")
    (directory / "verify.jsonl").write_text("".join(lines), encoding="utf-8")
    return directory


def test_the_list_opens_with_the_disagreements_and_names_their_signals(tmp_path: Path) -> None:
    with running([routing_run(tmp_path / "run")]) as server:
        html = http(server, "/")[2]
        assert listed(html) == ROUTED
        badges = re.findall(r'<span class="route r-review_first"[^>]*>≠ ([^<]*)</span> <a [^>]*title="([^"]+)"', html)
        assert {cid: signals for signals, cid in badges} == REVIEW_FIRST
        assert 'id="routing"' in html and '<li class="signal disagree" data-signal="algebra">' in html
        assert listed(http(server, "/?order=file")[2]) == sorted(ROUTED)
        html = http(server, "/?key=0/t6::counterfactual::0")[2]  # rollouts alone: ordinary review, shown
        assert 'class="route r-review">review</span>' in html and 'data-signal="rollouts">rollouts' in html
