"""Issue 24 items 8, 12, 14, 19, 21 on the review app: decision times, Unicode round trips, a full disk, a bounded
word diff and a cap on what KaTeX is given."""
from __future__ import annotations

import difflib
import json
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.curate.review.diff import MAX_TYPESET_CHARS, DiffBudget, word_diff
from injector.curate.review.decision_files import export_store, import_file
from injector.curate.review.store import Decision, ReviewStore
from test_review import STEPS, candidate, cli, decide, http, make_run, running  # noqa: F401 - cli is a fixture

T1, T2 = "t1::counterfactual::0", "t2::counterfactual::0"


def _in(minutes: float) -> str:
    return (datetime.now(timezone.utc) + timedelta(minutes=minutes)).isoformat()


def test_import_refuses_a_decision_time_beyond_the_clock_skew_tolerance(cli, tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": T1, "decision": "reject", "reason": "unreadable",
                                "time": "9999-12-31T00:00:00Z"}) + "\n", encoding="utf-8")
    result = CliRunner().invoke(cli, ["review", str(run), "--import", str(path)])
    assert result.exit_code == 2
    assert "d.jsonl:1: refused: time 9999-12-31" in result.output and "in the future" in result.output
    assert ReviewStore(run).rows() == []


def test_an_import_cannot_outrank_a_later_local_decision(cli, tmp_path: Path) -> None:
    """A row from a machine whose clock runs 3 minutes ahead (within the tolerance) is imported; a decision made
    here afterwards still stands, and the page shows it."""
    run = make_run(tmp_path / "run")
    path = tmp_path / "d.jsonl"
    path.write_text(json.dumps({"id": T1, "decision": "reject", "reason": "unreadable", "reviewer": "ann",
                                "time": _in(3)}) + "\n", encoding="utf-8")
    assert CliRunner().invoke(cli, ["review", str(run), "--import", str(path)]).exit_code == 0
    with running([run], reviewer="ann") as server:
        seen = ReviewStore(run).latest()[T1].time
        status, answer = decide(server, T1, decision="accept", seen=seen, confirm=True)
        assert status == 200, answer
        page = http(server, f"/?key=0/{T1}")[2]
    assert ReviewStore(run).latest()[T1].decision == "accept"
    assert answer["decision"]["time"] > seen
    assert 'id="status">accepted' in page


UNICODE = "line\u2028separator, next\x85line, para\u2029graph, \x1c\x1d\x1e, \r and \x0b\x0c, é, 𝔸, \ufeff"


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_export_import_round_trips_any_unicode(tmp_path: Path, suffix: str) -> None:
    source = ReviewStore(make_run(tmp_path / "a"))
    source.add_all([Decision(T1, "reject", reason=UNICODE, reviewer="ann\u2028"),
                    Decision(T2, "accept", edited_steps={2: "Her change is $9$" + UNICODE}, reviewer="bo")])
    exported = tmp_path / f"d{suffix}"
    assert export_store(source, exported) == 2
    target = ReviewStore(make_run(tmp_path / "b"))
    assert import_file(target, exported) == 2
    assert target.rows() == source.rows()
    assert import_file(target, exported) == 0


class _FullDisk(sqlite3.Connection):
    """A connection whose writes fail as SQLite's do when the disk is full."""

    def execute(self, sql: str, *args):  # type: ignore[override]
        if sql.lstrip().upper().startswith("INSERT"):
            raise sqlite3.OperationalError("database or disk is full")
        return super().execute(sql, *args)

    def executemany(self, sql: str, *args):  # type: ignore[override]
        raise sqlite3.OperationalError("database or disk is full")


def test_a_decision_on_a_full_disk_does_not_blame_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run(tmp_path / "run")
    with running([run], reviewer="ann") as server:
        monkeypatch.setattr(ReviewStore, "_connect",
                            lambda self: sqlite3.connect(self.path, timeout=30, factory=_FullDisk))
        status, answer = decide(server, T1, decision="accept")
    assert status == 503
    assert "disk is full" in answer["error"] and "free disk space" in answer["error"]
    assert "move it aside" not in answer["error"]
    monkeypatch.undo()
    assert ReviewStore(run).rows() == []  # nothing half-written, and the store opens as before


def test_a_file_that_is_no_store_is_still_said_to_be_one_to_move_aside(tmp_path: Path) -> None:
    from injector.util.errors import UserError

    run = make_run(tmp_path / "run")
    (run / "review.sqlite").write_bytes(b"not a database at all" * 100)
    with pytest.raises(UserError, match="move it aside"):
        ReviewStore(run)


def _words(n: int, *, tag: str = "") -> str:
    return " ".join(f"w{k % 97}{tag if k in (0, n - 1) else ''}" for k in range(n))


def test_a_20000_word_change_is_marked_whole_not_diffed_word_by_word() -> None:
    """The first and last words differ, so the changed middle is the whole step: the capped fallback is taken."""
    old, new = _words(20_000), _words(20_000, tag="x")
    budget = DiffBudget()
    left, right = word_diff(old, new, budget)
    assert budget.whole == 1
    assert left.count("<del>") == 1 and right.count("<ins>") == 1
    assert right.startswith("<ins>w0x ") and right.endswith(f" w{19_999 % 97}x</ins>")


def test_one_changed_word_in_20000_is_still_diffed_word_by_word() -> None:
    words = _words(20_000).split(" ")
    new = " ".join(words[:10_000] + ["CHANGED"] + words[10_001:])
    budget = DiffBudget()
    left, right = word_diff(" ".join(words), new, budget)
    assert budget.whole == 0 and right.count("<ins>") == 1 and "<ins>CHANGED</ins>" in right


def test_the_page_budget_marks_later_long_changes_whole() -> None:
    budget = DiffBudget(pairs=30_000)  # one 80-word step (159 tokens a side, 25,281 pairs) fits, not two
    pairs = [(_words(80), _words(80, tag="y")) for _ in range(3)]
    results = [word_diff(old, new, budget) for old, new in pairs]
    assert budget.whole == 2 and results[0][1].count("<ins>") == 2 and results[1][1].count("<ins>") == 1


class CountedMatcher(difflib.SequenceMatcher):
    """difflib's matcher, recording the size of every pair of token lists it is given."""

    pairs: list[tuple[int, int]] = []

    def __init__(self, isjunk, a, b, autojunk=True):
        CountedMatcher.pairs.append((len(a), len(b)))
        super().__init__(isjunk, a, b, autojunk)


def test_a_pathological_page_diffs_within_its_caps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 24 item 8: two 20,000-word steps that differ throughout, and 300 changed 60-word steps, on one page.
    The long pair is marked whole without any word diff; the word diffs done stay within the caps (no side over
    MAX_DIFF_TOKENS, their pairs within the page's budget): counted, not timed."""
    from injector.curate.review.diff import MAX_DIFF_TOKENS, PAGE_DIFF_BUDGET
    from injector.curate.review.render import render_page
    from injector.curate.review.session import ReviewSession, View

    monkeypatch.setattr("injector.curate.review.diff.difflib.SequenceMatcher", CountedMatcher)
    CountedMatcher.pairs = []
    steps = [_words(20_000), *(_words(60, tag=f"o{n}") for n in range(300))]
    modified = [" ".join(f"v{k % 89}" for k in range(20_000)), *(_words(60, tag=f"m{n}") for n in range(300))]
    run = make_run(tmp_path / "run", [candidate(T1, steps=steps, modified=modified, error_steps=[1])])
    page = render_page(ReviewSession([run], "bob"), key=f"0/{T1}", view=View(), token="t", nonce="n")
    assert 'id="diff-whole"' in page and page.count("<ins>") >= 301
    assert CountedMatcher.pairs and max(max(pair) for pair in CountedMatcher.pairs) <= MAX_DIFF_TOKENS
    assert sum(a * b for a, b in CountedMatcher.pairs) <= PAGE_DIFF_BUDGET < 20_000 * 20_000
    assert len(CountedMatcher.pairs) < 300  # the budget ran out: the later steps are marked whole


def test_a_page_with_a_huge_step_says_so_and_keeps_it_from_katex(tmp_path: Path) -> None:
    formula = "$" + "x+" * 200_000 + "1$"  # 400 KB: KaTeX took 52 s on it
    long_step = _words(20_000, tag="z")
    records = [candidate(T1, steps=[STEPS[0], _words(20_000), formula], modified=[STEPS[0], long_step, formula])]
    run = make_run(tmp_path / "run", records)
    with running([run]) as server:
        status, _, page = http(server, f"/?key=0/{T1}")
    assert status == 200 and 'id="diff-whole"' in page
    assert page.count('class="text mod no-tex"') == 2  # the formula's step, and step 2 (~120 KB)
    assert page.count('class="text orig no-tex"') == 2 and 'class="text mod"' in page  # step 1 is typeset
    assert len(formula) > MAX_TYPESET_CHARS
