"""The pieces the offline circular_logic, redundancy and confidence operators are built from: which clause states a
quantity, which other routes and worked-back equations hold, where certainty can be said grammatically."""
from __future__ import annotations

import random

import pytest

from injector.engines.offline.certainty import ADVERBS, AT_VERB
from injector.engines.offline.confidence import with_certainty
from injector.engines.offline.equations import computations, holds, inverse_equations, stated_quantity
from injector.engines.offline.redundancy import other_routes


@pytest.mark.parametrize(("body", "clause"), [
    ("So the total cost is $11 + 3.60 = 14.60$ dollars.", "the total cost is $14.60$ dollars"),
    ("Right, and since there are 60 seconds in a minute, then there are 60 * 7 = 420 seconds in 7 minutes.",
     "there are 420 seconds in 7 minutes"),
    ("After buying 1 more he has $2 + 1 = 3$ apples.", "he has $3$ apples"),
    ("If we simplify it we get $5 + 6 = 11$.", "we get $11$"),
    ("So there are $3 \\cdot 2 = 6$ integers that start with 1.", "there are $6$ integers that start with 1"),
    # The name the chain gives the quantity stays (PRMBench source prm_train_p1_368 once gave "... that $10$").
    ("We count that by using the fact that $m = 5\\cdot 2 = 10$.", "we count that by using the fact that $m = 10$"),
])
def test_the_clause_that_states_a_computed_quantity(body, clause):
    [computation] = computations(body, 0)
    assert stated_quantity(body, computation).clause(computation.value) == clause


@pytest.mark.parametrize("body", [
    "That gives $\\frac{25}{6} \\cdot 60 = 250$ minutes.",  # no subject that states the quantity
    "Then $j = 10 - 2 \\cdot 3 = 4$.",  # the math holds more than the computation
    "So $x = 7 + 0 = 7$ or $x = 3 - 7 = -4$.",  # one branch of an "or"
])
def test_no_clause_where_none_states_the_quantity(body):
    assert all(stated_quantity(body, c) is None for c in computations(body, 0))


def test_a_worked_back_fraction_in_prose_keeps_its_denominator_together():
    # PRMBench source prm_train_p1_465 once gave "546/3 * 7 * 13 = 2", which is false as written.
    body = "So the greatest common factor of the last term and x is 2 * 3 * 7 * 13 = 546"
    [computation] = computations(body, 0)
    [inverse] = [e for e in inverse_equations(computation.lhs, computation.value, body) if e.endswith("= 2")]
    written = stated_quantity(body, computation).math(inverse)
    assert written == "546/(3 * 7 * 13) = 2"
    assert holds(written.replace("/", " \\div ").split(" = ")[0], "2")


@pytest.mark.parametrize(("lhs", "value"), [("4 \\cdot 2.75", "11"), ("11 + 3.60", "14.60"),
                                            ("\\frac{120}{2.5}", "48"), ("12 \\cdot 8", "96")])
def test_other_routes_and_worked_back_equations_hold(lhs, value):
    routes = other_routes(lhs, value)
    assert routes and all(holds(route, value) and route != lhs for route in routes)
    inverses = inverse_equations(lhs, value, earlier=lhs)
    assert inverses and all(holds(*equation.rsplit(" = ", 1)) for equation in inverses)
    assert inverse_equations(lhs, value, earlier="") == []  # operands the solution never wrote are not known


@pytest.mark.parametrize("text", ["Let's start at the beginning.", "So let's consider the two letters as one.",
                                  "If we simplify it we get $11$.", "How many are left?"])
def test_no_certainty_on_a_plan_a_condition_or_a_question(text):
    assert all(with_certainty(text, random.Random(seed)) is None for seed in range(20))


def test_certainty_is_said_grammatically_and_leaves_the_answer_alone():
    text = "So the total cost is $14.60$ dollars.\n\n# Answer\n\n14.60"
    said = {with_certainty(text, random.Random(seed)) for seed in range(60)}
    for variant in said:
        first = variant.split("\n")[0]
        # An adverb after the connective or at the verb, or a modal for the copula; nothing after the statement.
        assert any(first.startswith(f"So {a} the") for a in ADVERBS) or \
            any(f"is {a} $14.60$" in first for a in AT_VERB) or "must be $14.60$" in first
        assert first.endswith("$14.60$ dollars.")
        assert variant.endswith("\n\n# Answer\n\n14.60") and "$14.60$" in variant
        assert not variant.startswith(("Clearly, so", "Obviously, so"))  # the old "Clearly, so the total ..."
    assert len(said) >= 5  # varied


@pytest.mark.parametrize(("body", "kept"), [
    ("So $\\binom{5}{2} = \\frac{5 \\cdot 4}{2} = 10$.", "\\binom{5}{2} = "),  # a named quantity: asserted bare
    # A computation is no name: asserting "$\sqrt{961}+106 = 147$" derives falsely (PRMBench prm_train_p1_119).
    ("That's $\\sqrt{961}+106=31+106=137$.", None),
])
def test_a_bare_assertion_keeps_only_a_name_for_the_quantity(body, kept):
    from injector.engines.offline.confidence import _bare

    found = [_bare(body, c) for c in computations(body, 0)]
    assert [b[2] for b in found if b] == ([kept] if kept else [])


def test_the_steps_own_sentence_with_other_math():
    from injector.engines.offline.equations import own_sentence

    body = "So the total cost is $11 + 3.60 = 14.60$ dollars."
    [computation] = computations(body, 0)
    assert own_sentence(body, stated_quantity(body, computation), "14.60") == "So the total cost is $14.60$ dollars"
    body = "So the total cost is $11 + 3.60 = 14.60$ dollars. That is a lot."  # the step goes on: not its own
    [computation] = computations(body, 0)
    assert own_sentence(body, stated_quantity(body, computation), "14.60") is None


def test_a_value_put_back_never_states_one_branch_of_an_or_alone():
    from injector import Trajectory
    from injector.engines.offline.redundancy import redundancy_options

    trajectory = Trajectory(id="t", question="Find the product of all real solutions of $(2x - 1)^2 = 49$.", steps=[
        "Taking square roots, $2x - 1 = 7$ or $2x - 1 = -7$.", "If $2x - 1 = 7$, then $x = 4$.",
        "If $2x - 1 = -7$, then $x = -3$.", "So the product is $4 \\cdot (-3) = -12$.\n\n# Answer\n\n-12"])
    inserted = [edit["text"] for option in redundancy_options(trajectory) for seed in range(40)
                if (made := option(random.Random(seed))) for edit in made.edits]
    assert any("2 \\cdot 4 - 1 = 7" in text for text in inserted)  # the value is put back
    assert not any("$2x - 1 = 7$" in text for text in inserted)  # but the branch is never stated on its own


def test_a_subject_is_not_cut_at_a_preposition():
    body = "Right. So that means the sum of the first 39 terms is equal to $126+1+2+3=132$."
    [computation] = computations(body, 0)
    assert stated_quantity(body, computation).clause("132") == "the sum of the first 39 terms is equal to $132$"
