"""Propagation by recomputation (injector/engines/offline/propagate.py): a changed value is carried through the
later steps that use it, exactly, or the change is not applicable; and the semantic checks can fail."""
from __future__ import annotations

import random

import pytest
from semantic_checks import checks_for

from injector import Taxonomy, Trajectory
from injector.engines.base import NotApplicable
from injector.engines.offline import OfflineEngine, Perturbation, replace
from injector.engines.offline.propagate import final_answer_changed, propagate, why_not

SHOP = ["The notebooks cost $4 \\cdot 2.75 = 11$ dollars.",
        "The pens cost $3 \\cdot 1.20 = 3.60$ dollars.",
        "So the total cost is $11 + 3.60 = 14.60$ dollars.",
        "She pays with a $\\$20$ bill, so her change is $20 - 14.60 = 5.40$ dollars.\n\n# Answer\n\n5.40"]
QUESTION = "Maya buys 4 notebooks at $\\$2.75$ each and 3 pens at $\\$1.20$ each. She pays with $\\$20$."


def test_a_slip_is_carried_to_the_answer_in_the_steps_own_notation():
    edits = propagate(SHOP, 0, SHOP[0].replace("= 11$", "= 12$"), question=QUESTION)
    assert [e["step"] for e in edits] == [1, 3, 4] and all(e["error"] for e in edits)
    assert edits[1]["text"] == "So the total cost is $12 + 3.60 = 15.60$ dollars."
    assert edits[2]["text"].endswith("$20 - 15.60 = 4.40$ dollars.\n\n# Answer\n\n4.40")
    assert final_answer_changed(SHOP, edits)


def test_symbols_solved_from_a_changed_equation_are_recomputed():
    steps = ["The angles of a triangle add up to $180^\\circ$, so $2x + x + (x + 30) = 180$.",
             "This simplifies to $4x + 30 = 180$, so $4x = 150$ and $x = 37.5$.",
             "Then angle $A$ is $2 \\cdot 37.5 = 75$ degrees.",
             "So angle $A$ measures $75^\\circ$.\n\n# Answer\n\n75"]
    edits = propagate(steps, 0, steps[0].replace("180", "360"), question="Find angle A.", recompute=True)
    texts = [e["text"] for e in edits]
    assert texts[1] == "This simplifies to $4x + 30 = 360$, so $4x = 330$ and $x = 82.5$."
    assert texts[-1].endswith("# Answer\n\n165")


def test_a_value_also_given_elsewhere_is_ambiguous():
    # 14.60 is in the question too: a later 14.60 could be either quantity.
    assert propagate(SHOP, 2, SHOP[2].replace("= 14.60$", "= 14.70$"), question=QUESTION + " It costs 14.60.") is None
    assert "also occurs before" in why_not(SHOP, 2, SHOP[2].replace("= 14.60$", "= 14.70$"),
                                           question=QUESTION + " It costs 14.60.")


def test_an_intermediate_expression_that_is_not_a_literal_makes_it_not_applicable():
    steps = ["Then $d = 4$ and the tenth term is $3 + 36 = 39$.",
             "So the sum is $\\frac{10(3 + 39)}{2} = 5 \\cdot 42 = 210$.\n\n# Answer\n\n210"]
    assert propagate(steps, 0, steps[0].replace("= 39$", "= 40$"), question="q") is None


def test_the_engine_skips_options_that_do_not_apply():
    taxonomy = Taxonomy.load()
    category = taxonomy.category("counterfactual")
    trajectory = Trajectory(id="t", question=QUESTION, steps=SHOP)
    works = lambda rng: Perturbation("x", [replace(1, "changed")], "because")  # noqa: E731
    engine = OfflineEngine({"counterfactual": lambda t: [lambda rng: None, works, lambda rng: None]})
    assert engine.perturb(trajectory, category, seed=0, sample=0).operator == "x"
    with pytest.raises(NotApplicable, match="2 other"):
        engine.perturb(trajectory, category, seed=0, sample=1)


def test_the_checks_fail_on_a_candidate_whose_later_steps_keep_the_true_values():
    original = Trajectory(id="t", question=QUESTION, steps=SHOP)
    slipped = SHOP[0].replace("= 11$", "= 12$")
    edits = propagate(SHOP, 0, slipped, question=QUESTION)
    process = list(SHOP)
    for e in edits:
        process[e["step"] - 1] = e["text"]
    good = {"modified_process": process, "error_steps": [1, 3, 4], "modified_steps": [1, 3, 4]}
    check = checks_for("numerical_calculation").check
    assert check(original, good) == []
    stale = dict(good, modified_process=[slipped, SHOP[1], SHOP[2].replace("11 +", "12 +"), SHOP[3]])
    assert any("false equation" in p for p in check(original, stale))
    unmarked = dict(good, error_steps=[1])
    assert any("not an error step" in p for p in check(original, unmarked))
    # counterfactual: an arithmetic slip is not false knowledge
    assert any("false forms" in p for p in checks_for("counterfactual").check(original, good))
    # step_contradiction: 12 replaces 11 in step 1 itself: no earlier step defines it
    assert any("defines" in p for p in checks_for("step_contradiction").check(original, good))


def test_seeded_operators_are_deterministic():
    from injector.engines.offline.numerical_calculation import numerical_calculation_options

    trajectory = Trajectory(id="t", question=QUESTION, steps=SHOP)
    first = [o(random.Random(5)) for o in numerical_calculation_options(trajectory)]
    again = [o(random.Random(5)) for o in numerical_calculation_options(trajectory)]
    assert [p and p.edits for p in first] == [p and p.edits for p in again] and any(first)


def test_a_slip_in_the_last_step_reaches_its_own_answer_line():
    steps = ["Each pen costs 2 dollars.", "So 3 pens cost $3 \\cdot 2 = 6$ dollars.\n\n# Answer\n\n6"]
    [edit] = propagate(steps, 1, steps[1].replace("= 6$", "= 7$"), question="A pen costs 2 dollars.")
    assert edit["text"] == "So 3 pens cost $3 \\cdot 2 = 7$ dollars.\n\n# Answer\n\n7"


def test_a_solution_without_an_answer_line_ends_at_its_last_result():
    steps = ["There are 60 seconds in a minute, so 60 * 7 = 420 seconds in 7 minutes.",
             "And 60 * 0.8 = 48 seconds in 0.8 minutes.", "So in total 420 + 48 = 468 seconds.", "Exactly."]
    edits = propagate(steps, 0, steps[0].replace("= 420", "= 430"), question="How many seconds are in 7.8 minutes?")
    assert [e["step"] for e in edits] == [1, 3] and "430 + 48 = 478" in edits[1]["text"]
    assert final_answer_changed(steps, edits)


def test_a_simplification_never_becomes_x_equals_x():
    steps = ["That gives $\\frac{15}{56} + \\frac{15}{56} = \\frac{30}{56}$.",
             "Simplifying, $\\frac{30}{56} = \\frac{15}{28}$.\n\n# Answer\n\n\\frac{15}{28}"]
    slipped = steps[0].replace("= \\frac{30}{56}", "= \\frac{29}{56}")
    assert "would state" in why_not(steps, 0, slipped, question="q")


def test_a_claim_in_words_about_changed_numbers_is_not_rewritten():
    steps = ["Since $3^5 = 243$, this equals $\\frac{162}{243}$.",
             "Both 162 and 243 are divisible by 81, so $\\frac{162}{243} = \\frac{2}{3}$.\n\n# Answer\n\n\\frac{2}{3}"]
    assert "in words" in why_not(steps, 0, steps[0].replace("243", "244"), question="q")
