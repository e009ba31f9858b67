"""The judge calibrated against people, and the reviewers' alpha, in `inject stats` and the dataset card; the
figures are pinned (kappa -1/6 worked out by hand below, and equal to scikit-learn's)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from injector.cli.commands import main
from injector.curate.calibration import calibration, human_decisions
from injector.curate.review.store import Decision, ReviewStore
from test_review import candidate, make_run
from test_review_triage import write_verdicts

IDS = [f"c{n}::counterfactual::0" for n in range(8)]
VERDICTS = dict(zip(IDS, ["confirmed", "confirmed", "confirmed", "confirmed", "missed", "late", "missed",
                          "confirmed"]))
VOTES = [("A", "A"), ("A", "A"), ("A", "R"), ("R", "R"), ("R", "R"), ("A", None), ("A", "A"), ("A", "R")]
# c2 is a tie (left out); c7 is adjudicated: reject. The judge passes c0, c1, c3, c7 (confirmed) and the humans
# accept c0, c1, c5, c6: 3 of 7 match; kappa = (3/7 - 25/49) / (1 - 25/49) = -1/6.


@pytest.fixture
def calibrated(tmp_path: Path) -> Path:
    run = write_verdicts(make_run(tmp_path / "run", [candidate(cid) for cid in IDS]), VERDICTS)
    rows = []
    for cid, votes in zip(IDS, VOTES):
        for reviewer, vote in zip(("ann", "bo"), votes):
            if vote:
                rows.append(Decision(cid, "accept" if vote == "A" else "reject",
                                     reason="not an error" if vote == "R" else "", reviewer=reviewer))
    rows.append(Decision(IDS[7], "reject", reason="not an error", reviewer="judy", role="adjudication"))
    ReviewStore(run).add_all(rows)
    return run


def test_the_humans_decision_is_adjudicated_else_the_majority(calibrated: Path) -> None:
    humans = human_decisions(calibrated)
    assert IDS[2] not in humans and humans[IDS[7]] == "reject" and humans[IDS[5]] == "accept"


def test_calibration_figures(calibrated: Path) -> None:
    (overall, counterfactual) = calibration([calibrated], rounds=300)
    assert overall.category == "all" and counterfactual.category == "counterfactual"
    assert (overall.units, overall.matching) == (7, 3)
    assert overall.kappa == pytest.approx(-1 / 6)
    assert overall.kappa == pytest.approx(cohen_kappa_score([1, 1, 1, 0, 0, 0, 1], [1, 1, 0, 0, 1, 1, 0]))
    assert overall.low <= overall.kappa <= overall.high
    assert overall.table == {"confirmed": {"accept": 2, "reject": 2}, "missed": {"accept": 1, "reject": 1},
                             "late": {"accept": 1, "reject": 0}}


def test_stats_and_the_card_show_agreement_and_calibration(calibrated: Path, tmp_path: Path) -> None:
    text = CliRunner().invoke(main, ["stats", str(calibrated)])
    assert text.exit_code == 0, text.output
    assert "judge against humans" in text.output and "reviewer agreement (Krippendorff's alpha" in text.output
    line = next(li for li in text.output.splitlines() if li.startswith("all ") and "confirmed 2/2" in li)
    assert "     7    43%  -0.17" in line
    numbers = json.loads(CliRunner().invoke(main, ["stats", str(calibrated), "--json"]).output)
    assert numbers["reviews"]["calibration"][0]["kappa"] == pytest.approx(-1 / 6)
    decision_alpha = next(f for f in numbers["reviews"]["agreement"] if f["category"] == "all"
                          and f["measure"] == "decision")
    assert decision_alpha["units"] == 7  # all but c5 have two reviewers
    built = CliRunner().invoke(main, ["build", str(calibrated), "--out", str(tmp_path / "split")])
    assert built.exit_code == 0, built.output
    card = (tmp_path / "split" / "README.md").read_text(encoding="utf-8")
    assert "## Reviewer agreement and the judge" in card and "judge against humans" in card
