"""Offline missing_condition moves (PRMBench's sense) and the semantic checks of missing_condition and
domain_inconsistency: each move fires only where it fits, never deletes a given, and labels the first step that
relies on the missing condition; each check passes honest candidates and fails wrong ones."""
from __future__ import annotations

import copy
import random
from pathlib import Path

import yaml
from semantic_checks import domain_inconsistency as domain_check
from semantic_checks import missing_condition as condition_check

from injector import Trajectory
from injector.answer.edits import apply_edits
from injector.answer.contract import Edit
from injector.engines.offline import OPERATORS, OfflineEngine
from injector.engines.offline.missing_condition import (missing_condition_options, drop_nonzero_options, drop_plus_minus_options,
                                                        drop_positivity_options, restrict_to_positive_options)

PRODUCT = Trajectory(id="product", question="Find the product of all real solutions of $(2x - 1)^2 = 49$.", steps=[
    "Taking square roots, $2x - 1 = 7$ or $2x - 1 = -7$.",
    "If $2x - 1 = 7$, then $x = 4$.",
    "If $2x - 1 = -7$, then $2x = -6$ and $x = -3$.",
    "Check: $(2 \\cdot (-3) - 1)^2 = 49$.",
    "Their product is $4 \\cdot (-3) = -12$.",
    "So the product is $-12$.\n\n# Answer\n\n-12"])
POSITIVE = Trajectory(id="positive", question="Suppose $a$ is a positive integer such that $a^2 = 49$. What is $a$?",
                      steps=["We have $a^2 = 49$, so $a = 7$ or $a = -7$.",
                             "Since $a$ is a positive integer, we keep the first root.",
                             "So $a = 7$.",
                             "# Answer\n\n7"])


def candidate(trajectory: Trajectory, perturbation) -> dict:
    """The candidate record fields the checks read, from an operator's edits."""
    applied = apply_edits(list(trajectory.steps), [Edit.model_validate(e) for e in perturbation.edits])
    return {"modified_question": perturbation.question or trajectory.question,
            "modified_process": applied.modified_process, "modified_steps": applied.modified_steps,
            "error_steps": applied.error_steps, "original_process": list(trajectory.steps)}


def test_restrict_to_positive_flags_the_first_step_accepting_the_excluded_value_and_the_answer():
    [option] = restrict_to_positive_options(PRODUCT)
    p = option(random.Random(0))
    assert p.question == "Find the product of all positive real solutions of $(2x - 1)^2 = 49$."
    c = candidate(PRODUCT, p)
    # Step 3 states x = -3; step 4 (the check) stays true; steps 5 and 6 carry -3 into the answer.
    assert c["error_steps"] == [3, 5, 6] and c["modified_steps"] == []
    assert condition_check.check(PRODUCT, c) == []


def test_restrict_to_positive_needs_a_question_about_all_values_and_a_negative_value():
    larger = PRODUCT.model_copy(update={"question": "Find the larger solution of $(2x - 1)^2 = 49$."})
    assert restrict_to_positive_options(larger) == []
    no_negative = PRODUCT.model_copy(update={"steps": ["$x = 4$ or $x = 3$.", "Their product is $12$."]})
    assert restrict_to_positive_options(no_negative) == []


def test_drop_positivity_keeps_the_question_grammatical_and_flags_the_reasoning_step():
    [option] = drop_positivity_options(POSITIVE)
    p = option(random.Random(0))
    assert p.question == "Suppose $a$ is an integer such that $a^2 = 49$. What is $a$?"
    c = candidate(POSITIVE, p)
    # "Since a is a positive integer", and the results reached under it, which skip a = -7.
    assert c["error_steps"] == [2, 3, 4]
    assert condition_check.check(POSITIVE, c) == []


def test_drop_positivity_not_where_the_question_counts_or_a_step_only_restates_it():
    counting = POSITIVE.model_copy(update={"question": "How many positive integers $a$ satisfy $a^2 < 49$?"})
    assert drop_positivity_options(counting) == []  # "how many integers" would have no finite answer
    restating = POSITIVE.model_copy(update={"steps": ["Let $a$ be the positive integer we want.",
                                                      *POSITIVE.steps]})
    assert drop_positivity_options(restating) == []


def test_drop_nonzero_takes_the_clause_and_flags_the_division():
    t = Trajectory(id="nz", question="If $2x - y = a$ and $3y - 6x = b$ have a solution, find $\\frac{a}{b}$, "
                   "assuming $b \\neq 0$.", steps=["Multiply the first by $-3$: $6x - 3y = -3a$, so $b = -3a$.",
                                                   "Since $b$ is not equal to $0$, we can divide by $b$.",
                                                   "So $\\frac{a}{b} = -\\frac{1}{3}$.\n\n# Answer\n\n-\\frac{1}{3}"])
    [option] = drop_nonzero_options(t)
    c = candidate(t, option(random.Random(0)))
    assert c["modified_question"].endswith("find $\\frac{a}{b}$.")
    assert c["error_steps"] == [2, 3]
    assert condition_check.check(t, c) == []


def test_drop_plus_minus_only_where_all_roots_are_asked_and_nothing_later_uses_them():
    steps = ["By the quadratic formula, $x = 3 \\pm \\sqrt{2}$."]
    asks_all = Trajectory(id="pm", question="Find all solutions of $x^2 - 6x + 7 = 0$.", steps=steps)
    larger = Trajectory(id="pm2", question="Find the larger root of $x^2 - 6x + 7 = 0$.", steps=steps)
    used_later = asks_all.model_copy(update={"steps": [*steps, "Their sum is $6$."]})
    answered = asks_all.model_copy(update={"steps": [steps[0] + "\n\n# Answer\n\n3+\\sqrt{2}, 3-\\sqrt{2}"]})
    assert drop_plus_minus_options(larger) == [] and drop_plus_minus_options(used_later) == []
    assert drop_plus_minus_options(answered) == []
    [option] = drop_plus_minus_options(asks_all)
    c = candidate(asks_all, option(random.Random(0)))
    assert c["modified_process"] == ["By the quadratic formula, $x = 3 + \\sqrt{2}$."] and c["error_steps"] == [1]
    assert condition_check.check(asks_all, c) == []


def test_no_move_deletes_a_given_or_makes_a_number_vague():
    # The old moves: "3 bagels" -> "some bagels", a sentence with a number dropped. Neither exists any more.
    t = Trajectory(id="bagels", question="Tom buys 3 bagels at $2 each. The coffee costs $4. What does he pay?",
                   steps=["The bagels cost $3 \\cdot 2 = 6$ dollars.", "With coffee, $6 + 4 = 10$ dollars."])
    assert missing_condition_options(t) == []


def test_condition_check_fails_a_wrong_first_step_a_lost_given_and_broken_wording():
    [option] = restrict_to_positive_options(PRODUCT)
    good = candidate(PRODUCT, option(random.Random(0)))
    late = {**good, "error_steps": [5, 6]}
    assert any("step 3 is the first" in p for p in condition_check.check(PRODUCT, late))
    lost = {**good, "modified_question": "Find the product of all positive real solutions of $(2x - 1)^2$."}
    assert any("lost the given" in p for p in condition_check.check(PRODUCT, lost))
    vague = {**good, "modified_question": "Find the product of some positive real solutions of $(2x - 1)^2 = 49$."}
    assert any("vague" in p for p in condition_check.check(PRODUCT, vague))
    [option] = drop_positivity_options(POSITIVE)
    dropped = candidate(POSITIVE, option(random.Random(0)))
    article = {**dropped, "modified_question": "Suppose $a$ is a integer such that $a^2 = 49$. What is $a$?"}
    assert any("article" in p for p in condition_check.check(POSITIVE, article))


def test_condition_check_finds_the_excluded_value_inside_roots_products_exponents_and_words():
    # The first mention of -3 hides in a root, a product, an exponent or words: the check must see each.
    for hidden in ["$\\sqrt{(-3)^2} = 3$", "$4 \\cdot (-3)$", "$2^{-3}$", "negative three"]:
        t = PRODUCT.model_copy(update={"steps": [PRODUCT.steps[0], f"Note {hidden}.", *PRODUCT.steps[1:]]})
        [option] = restrict_to_positive_options(t)
        c = candidate(t, option(random.Random(0)))
        assert c["error_steps"][0] == 4  # what the operator flags: the step stating x = -3
        assert any("step 2 is the first" in p for p in condition_check.check(t, c)), hidden


WORKED = yaml.safe_load((Path(__file__).parent.parent / "prompts" / "examples" /
                         "domain_inconsistency.yaml").read_text(encoding="utf-8"))[0]


def worked_candidate() -> tuple[Trajectory, dict]:
    original = Trajectory(id="worked", question=WORKED["question"], steps=WORKED["steps"])
    answer = WORKED["answer"]
    changed = [k for k, (a, b) in enumerate(zip(WORKED["steps"], answer["modified_process"]), 1) if a != b]
    return original, {"modified_question": WORKED["question"], "modified_process": answer["modified_process"],
                      "modified_steps": changed, "error_steps": answer["error_steps"]}


def test_domain_check_passes_the_worked_example():
    original, c = worked_candidate()
    assert domain_check.check(original, c) == []


def test_domain_check_fails_a_rule_outside_its_domain_an_unchanged_step_and_no_rule():
    original, c = worked_candidate()
    real = Trajectory(id="real", question="Simplify $(2+\\sqrt{3})(2-\\sqrt{3})$.",
                      steps=["This is $(a+b)(a-b)$ with $a = 2$, $b = \\sqrt{3}$.", "So it is $4 - 3 = 1$."])
    real_c = {"modified_question": real.question, "modified_steps": [1], "error_steps": [1, 2],
              "modified_process": ["Here $2-\\sqrt{3}$ is the conjugate of $2+\\sqrt{3}$, and a number times its "
                                   "conjugate is the number squared.", "So it is $(2+\\sqrt{3})^2$."]}
    assert domain_check.domains(real.question, list(real.steps)) == set()
    assert any("not in that domain" in p for p in domain_check.check(real, real_c))
    unchanged = {**c, "error_steps": [1, 5]}
    assert any("unchanged step" in p for p in domain_check.check(original, unchanged))
    plain = copy.deepcopy(c)
    first = min(c["error_steps"])  # the step that carries the rule (step 5 of the worked example)
    plain["modified_process"][first - 1] = "So, let's first do the denominator: it is $-5$."
    assert any("no rule" in p for p in domain_check.check(original, plain))


def test_domain_inconsistency_needs_a_model_offline():
    assert "domain_inconsistency" not in OPERATORS
    from injector import Taxonomy
    reason = OfflineEngine().unsupported_reason(Taxonomy.load().category("domain_inconsistency"))
    assert reason and "needs a model" in reason
