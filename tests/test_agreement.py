"""`inject review --agreement`: alpha and kappa from the reference implementations, checked on textbook examples.

Krippendorff's alpha: the worked example of K. Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011),
four observers, twelve units, nominal values 1-5 with gaps, alpha = 0.743. Cohen's kappa: the example of the
Wikipedia article "Cohen's kappa" (50 proposals, both yes 20, A yes B no 5, A no B yes 10, both no 15): 0.4."""
from __future__ import annotations

import math
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.metrics import cohen_kappa_score

from injector.curate.agreement import agreement, alpha, kappa, rated_candidates
from injector.curate.review.store import Decision, ReviewStore
from test_review import cli, make_run  # noqa: F401 - cli is a fixture

NAN = math.nan
KRIPPENDORFF = {  # observer -> value per unit (nan: no value), Krippendorff (2011), section C
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    "C": [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
}
STEPS = [f"Step {n} of the solution." for n in range(1, 7)]


def six_step_candidate(cid: str, category: str = "counterfactual") -> dict:
    modified = [*STEPS[:5], "Step 6, changed."]
    return {"original_question": "q", "modified_question": "q", "original_process": STEPS,
            "modified_process": modified, "modified_steps": [6], "error_steps": [6], "reason": "r", "idx": cid,
            "question": "q", "classification": category, "id": cid, "category": category, "trajectory_id": cid,
            "sample": 0}


def run_with(tmp_path: Path, count: int, decisions: list[Decision], category=lambda n: "counterfactual") -> Path:
    run = make_run(tmp_path / "run", [six_step_candidate(f"u{n}", category(n)) for n in range(count)])
    ReviewStore(run).add_all(decisions)
    return run


def krippendorff_run(tmp_path: Path) -> Path:
    """Each observer accepts unit n with its value as the first (and only) error step."""
    return run_with(tmp_path, 12, [Decision(f"u{n}", "accept", corrected_error_steps=[int(v)], reviewer=name)
                                   for name, values in KRIPPENDORFF.items()
                                   for n, v in enumerate(values) if not math.isnan(v)])


def test_alpha_on_krippendorffs_worked_example(tmp_path: Path) -> None:
    items = rated_candidates([krippendorff_run(tmp_path)])
    value = alpha(items, "first_error_step", list(KRIPPENDORFF))
    reference = krippendorff.alpha(reliability_data=list(KRIPPENDORFF.values()), level_of_measurement="nominal")
    assert round(value, 3) == 0.743 and value == pytest.approx(reference)
    # per step: step k of unit n is an error step when the observer's value is k
    flags = [[NAN if math.isnan(v) else float(v == step) for v in values for step in range(1, 7)]
             for values in KRIPPENDORFF.values()]
    assert alpha(items, "step_error", list(KRIPPENDORFF)) == pytest.approx(
        krippendorff.alpha(reliability_data=flags, level_of_measurement="nominal"))


def wikipedia_run(tmp_path: Path) -> Path:
    pairs = [("accept", "accept")] * 20 + [("accept", "reject")] * 5 + [("reject", "accept")] * 10 + \
            [("reject", "reject")] * 15
    return run_with(tmp_path, 50, [Decision(f"u{n}", choice, reason="not an error" if choice == "reject" else "",
                                            reviewer=name)
                                   for n, pair in enumerate(pairs) for name, choice in zip("AB", pair)],
                    category=lambda n: "counterfactual" if n % 2 else "redundancy")


def test_kappa_on_the_wikipedia_example_and_scikit_learn(tmp_path: Path) -> None:
    items = rated_candidates([wikipedia_run(tmp_path)])
    value, units = kappa(items, "decision", ("A", "B"))
    assert units == 50 and value == pytest.approx(0.4)
    a = [i.decision["A"] for i in items]
    b = [i.decision["B"] for i in items]
    assert value == pytest.approx(cohen_kappa_score(a, b))
    assert alpha(items, "decision", ["A", "B"]) == pytest.approx(
        krippendorff.alpha(reliability_data=[a, b], level_of_measurement="nominal"))


def test_figures_per_category_and_overall_with_intervals(tmp_path: Path) -> None:
    items = rated_candidates([wikipedia_run(tmp_path)])
    figures = {(f.category, f.measure, f.statistic): f for f in agreement(items, rounds=200)}
    overall = figures[("all", "decision", "kappa A/B")]
    assert overall.value == pytest.approx(0.4) and overall.low < 0.4 < overall.high and overall.units == 50
    assert {c for c, _, _ in figures} == {"all", "counterfactual", "redundancy"}
    odd = [i for n, i in enumerate(items) if n % 2]
    assert figures[("counterfactual", "decision", "alpha")].value == pytest.approx(
        krippendorff.alpha(reliability_data=np.array([[i.decision[r] for i in odd] for r in "AB"]),
                           level_of_measurement="nominal"))
    assert figures[("all", "decision", "alpha")] == next(
        f for f in agreement(items, rounds=200) if (f.category, f.measure, f.statistic) == ("all", "decision", "alpha"))


def test_agreement_command_prints_the_table(cli, tmp_path: Path) -> None:
    run = krippendorff_run(tmp_path)
    result = CliRunner().invoke(cli, ["review", str(run), "--agreement", "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    assert "12 reviewed candidates, 11 with two or more reviewers" in result.output
    line = next(li for li in result.output.splitlines() if li.startswith("all") and "first_error_step" in li
                and " alpha " in li)
    assert " 0.743 " in line


def test_a_single_value_throughout_is_not_a_number_but_said(tmp_path: Path) -> None:
    run = run_with(tmp_path, 3, [Decision(f"u{n}", "accept", reviewer=r) for n in range(3) for r in "AB"])
    items = rated_candidates([run])
    assert math.isnan(alpha(items, "decision", ["A", "B"]))
    assert math.isnan(kappa(items, "decision", ("A", "B"))[0])


def test_the_resampled_kappa_is_scikit_learns() -> None:
    from injector.curate.agreement import _kappa_resampled

    generator = np.random.default_rng(0)
    for labels in (2, 3, 7):
        for _ in range(30):
            data = generator.integers(0, labels, (2, 40)).astype(float)
            data[generator.random((2, 40)) < 0.1] = NAN
            both = ~np.isnan(data).any(axis=0)
            assert _kappa_resampled(data) == pytest.approx(cohen_kappa_score(data[0, both], data[1, both]))


def test_no_decisions_at_all_give_empty_figures(tmp_path: Path) -> None:
    """A store with no row (or rows for no candidate of the run) is no error: nothing to report."""
    run = run_with(tmp_path, 2, [])
    assert rated_candidates([run]) == []
    assert all(f.units == 0 and math.isnan(f.value) for f in agreement([], rounds=10))
    assert math.isnan(alpha([], "decision", [])) and math.isnan(kappa([], "decision", ("A", "B"))[0])
