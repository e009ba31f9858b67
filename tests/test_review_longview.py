"""Long solutions: unchanged runs collapse, the header gives the rule, the final answers and the ground truth, and
a changed final answer with an unmarked last step is warned about."""
from __future__ import annotations

from pathlib import Path

from test_review import candidate, http, make_run, running, sample_candidates

LONG = [f"Step {n}: we note that ${n} + 0 = {n}$." for n in range(1, 101)]
LONG_CHANGED = [*LONG[:30], *[f"Step {n}: we note that ${n} + 1 = {n}$." for n in range(31, 40)], *LONG[39:]]
LONG_ID = "long::counterfactual::0"


def long_candidate() -> dict:
    return candidate(LONG_ID, steps=LONG, modified=LONG_CHANGED, error_steps=[31], ground_truth="100")


def test_unchanged_runs_collapse_and_the_header_says_the_rule_and_answers(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", [long_candidate(), *sample_candidates()])
    with running([run]) as server:
        page = http(server, f"/?key=0/{LONG_ID}")[2]
        short = http(server, "/?key=0/t3::counterfactual::0")[2]
    assert "steps 1–30 unchanged (30): show" in page and "steps 40–100 unchanged (61): show" in page
    assert page.count('<tr hidden data-in-run="1" ') == 30 and page.count('<tr hidden data-in-run="40" ') == 61
    assert page.count('<tr class="step changed') == 9  # the changes are never hidden
    assert "<b>error steps:</b>" in page and "<b>not this:</b>" in page
    assert "ground truth <code>100</code>" in page and 'id="answer-warning"' not in page
    # t3: the final answer went from 9 to 8, only step 2 is marked: warned
    assert 'original <code id="answer-old">9</code> → modified <code id="answer-new">8</code> (changed)' in short
    assert 'id="answer-warning">the final answer changed (9 → 8) but the last step (3)' in short
    assert "unchanged (" not in short  # three steps: nothing to collapse
    # The checklist: the common checks, then the category's own question; boxes only (nothing is saved).
    assert page.count('<input type="checkbox" class="check">') == 5 and 'id="checklist"' in page
    assert "The false fact or assumption is stated as true, and every later use carries it." in page


def test_each_bundled_category_has_its_own_check_and_multi_solution_no_error_checks() -> None:
    from injector.curate.review.longview import CATEGORY_CHECKS, CHECKS, checklist
    from injector.taxonomy import Taxonomy

    taxonomy = Taxonomy.load()
    assert set(CATEGORY_CHECKS) == {category.id for category in taxonomy.categories}
    multi = checklist(taxonomy.category("multi_solution"))
    assert CATEGORY_CHECKS["multi_solution"] in multi and CHECKS[0] not in multi and multi.count("checkbox") == 2
    assert checklist(None).count("checkbox") == len(CHECKS)  # a category of another taxonomy: the common ones
