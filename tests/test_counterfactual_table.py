"""Each row of the offline counterfactual table fires where a step uses that knowledge, the error propagates to
the answer, and the independent check recognises the false form (and does not see one in the true step)."""
from __future__ import annotations

import asyncio
import random

import pytest
from semantic_checks import checks_for
from semantic_checks.counterfactual import false_forms

from injector.engines.offline import WITHDRAWN_OPERATORS
from injector import OfflineEngine, Taxonomy, Trajectory, inject_one
from injector.engines.offline.counterfactual import TABLE
from injector.records.models import Candidate

USES = {
    "minutes_per_hour": "There are 60 minutes in an hour, so 3 hours is $3 \\cdot 60 = 180$ minutes.",
    "seconds_per_minute": "A minute has 60 seconds, so 4 minutes is $4 \\cdot 60 = 240$ seconds.",
    "seconds_per_hour": "An hour has 3600 seconds, so 2 hours is $2 \\cdot 3600 = 7200$ seconds.",
    "meters_per_kilometer": "A kilometer is 1000 meters, so 3 kilometers is $3 \\cdot 1000 = 3000$ meters.",
    "inches_per_foot": "A foot is 12 inches, so 5 feet is $5 \\cdot 12 = 60$ inches.",
    "hours_per_day": "A day has 24 hours, so 3 days is $3 \\cdot 24 = 72$ hours.",
    "quadrilateral_angle_sum": "The angles of a quadrilateral add up to $360^\\circ$, so the last angle is "
                               "$360 - 100 - 80 - 90 = 90$ degrees.",
    "binomial_as_permutation": "There are $\\binom{6}{2} = \\frac{6 \\cdot 5}{2} = 15$ pairs.",
    "binomial_without_complement": "A committee of 3 of the 7 can be chosen in $\\binom{7}{3} = 35$ ways.",
    "root_of_sum": "The hypotenuse is $\\sqrt{5^2 + 12^2} = \\sqrt{169} = 13$.",
    "power_as_product": "There are $2^5 = 32$ subsets.",
    "triangle_area_without_half": "The area of the triangle is $\\frac{1}{2} \\cdot 6 \\cdot 4 = 12$.",
    "polygon_angle_sum": "The interior angles of a hexagon add up to $(6-2) \\cdot 180 = 720$ degrees.",
    "polygon_diagonals": "An octagon has $\\frac{8(8-3)}{2} = 20$ diagonals.",
    "gauss_sum": "The sum is $\\frac{10 \\cdot 11}{2} = 55$.",
}


def test_every_row_has_a_use_here():
    assert set(USES) == {row.id for row in TABLE}


@pytest.mark.parametrize("row_id", sorted(USES))
def test_each_row_fires_propagates_and_is_recognised(row_id):
    step = USES[row_id]
    result = step.rstrip(".").split("= ")[-1].split("$")[0].strip()
    trajectory = Trajectory(id=row_id, question="What is it?",
                            steps=[step, f"So the result is {result}.\n\n# Answer\n\n{result}"])
    taxonomy = Taxonomy.load()
    records = []  # a step can use knowledge of several rows (both binomial rows fire on a \binom): the samples
    for sample in range(3):
        candidate = asyncio.run(inject_one(taxonomy, taxonomy.category("counterfactual"), trajectory,
                                           OfflineEngine(operators=WITHDRAWN_OPERATORS), seed=0, sample=sample))
        if isinstance(candidate, Candidate):
            records.append(candidate.model_dump(mode="json"))
    mine = [r for r in records if r["provenance"]["operator"] == f"false_knowledge:{row_id}"]
    assert mine, [r["provenance"]["operator"] for r in records]
    record = mine[0]
    assert record["error_steps"] == [1, 2]
    assert row_id in false_forms(step, record["modified_process"][0])
    assert false_forms(step, step) == []  # the true step states no false form
    assert checks_for("counterfactual").check(trajectory, record) == []


def test_a_constant_is_misknown_from_its_first_use_on():
    # PRMBench's prm_train_p1_0 once gave two candidates: 100 seconds a minute in step 2 and in step 3 alone (the
    # solver then knows the constant in step 2 and forgets it in step 3, and the two share most of their text).
    from injector.engines.offline.counterfactual import counterfactual_options

    trajectory = Trajectory(id="minutes", question="How many seconds are in 2 minutes and 4 minutes together?", steps=[
        "There are 60 seconds in a minute, so 2 minutes is 2 * 60 = 120 seconds.",
        "And since there are 60 seconds in a minute, 4 minutes is 4 * 60 = 240 seconds.",
        "So in total there are 120 + 240 = 360 seconds.\n\n# Answer\n\n360"])
    made = [option(random.Random(0)) for option in counterfactual_options(trajectory)]
    assert [p.edits[0]["step"] for p in made if p] == [1]


