"""Each worked example is an instance of its own category and of no neighbour, checked per category (the arithmetic
with sympy); each category's prompt says what it is not and renders only the shared rules that apply to it; a unit
never sees its own problem as a worked example.

The per-example facts the checks need (the removed premise, the carried rule's two domains, the loop's two ends)
are written here, keyed by the example's question, so an example without them fails loudly."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sympy

from injector.answer.final import final_answer_of_steps
from injector.inject.examples import examples_for
from injector.inject.prompts import render_messages
from injector.model.trajectory import Trajectory
from injector.taxonomy import Taxonomy, WorkedExample

TAXONOMY = Taxonomy.load()
INJECTED = [c.id for c in TAXONOMY.categories if not c.rules.multi_solution]
FIXTURES = Path(__file__).parent / "fixtures" / "prmbench"
CERTAINTY = re.compile(r"\b(plainly|clearly|obviously|beyond (doubt|question)|no doubt|certain(ly)?|"
                       r"nothing more to it|without question|complete certainty|well known)\b", re.I)
CONTENT_FREE = re.compile(r"^\s*(right|exactly|yes|you're right|that's right|correct)[.!]?\s*$", re.I)
X = sympy.Symbol("x")


def examples(category_id: str) -> list[WorkedExample]:
    return list(TAXONOMY.category(category_id).examples)


def error_texts(example: WorkedExample) -> list[str]:
    return [example.answer.modified_process[k - 1] for k in example.answer.error_steps]


def system(category_id: str, trajectory: Trajectory | None = None, mode: str = "full") -> str:
    trajectory = trajectory or Trajectory(id="t", question="What is $1 + 1$?", steps=["$1 + 1 = 2$.\n\n# Answer\n\n2"])
    return str(render_messages(TAXONOMY, TAXONOMY.category(category_id), trajectory, output_mode=mode,
                               attach_images=False)[0]["content"])


# --- every category ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("category_id", [c.id for c in TAXONOMY.categories])
def test_every_category_has_two_worked_examples_with_a_source(category_id: str) -> None:
    shown = examples(category_id)
    assert len(shown) >= 2, category_id
    assert all(e.source for e in shown if len(e.steps) >= 9 or e.source), category_id


NEIGHBOURS = {
    "deception": ["missing condition", "domain inconsistency", "confidence"],
    "missing_condition": ["counterfactual", "domain inconsistency"],
    "domain_inconsistency": ["missing condition", "counterfactual"],
    "counterfactual": ["domain inconsistency", "step contradiction", "confidence", "missing condition"],
    "confidence": ["counterfactual", "step contradiction"],
    "step_contradiction": ["counterfactual", "confidence"],
    "redundancy": ["circular logic"],
    "circular_logic": ["redundancy"],
}


@pytest.mark.parametrize("category_id", INJECTED)
def test_the_prompt_names_the_neighbours_this_category_must_not_become(category_id: str) -> None:
    text = system(category_id)
    not_this = text.split("Not this category:", 1)[1].split("\n", 1)[0] + text.split("What this is not:", 1)[-1]
    for neighbour in NEIGHBOURS[category_id]:
        assert f"that is {neighbour}" in not_this, (category_id, neighbour)


@pytest.mark.parametrize("mode", ["full", "edits"])
@pytest.mark.parametrize("category_id", INJECTED)
def test_the_shared_text_renders_only_what_applies(category_id: str, mode: str) -> None:
    text = system(category_id, mode=mode)
    warning = "that would turn the error into a contradiction between two steps"
    assert (warning in text) == (category_id not in ("step_contradiction", "redundancy", "circular_logic"))
    # The error-step sentence says "every later step the error makes false" once, not twice in other words.
    for line in text.splitlines():
        if "Error steps:" in line or "The error steps are" in line or "- error_steps: the 1-based" in line:
            assert line.count("later step") <= 1, line
    assert "made false by it, and" not in text
    assert 'content-free affirmation such as "Right.", "Exactly." or "You\'re right!") is never an error step' in text


def test_missing_conditions_error_steps_follow_the_general_labelling_rule() -> None:
    rule = TAXONOMY.category("missing_condition").error_steps
    assert "the steps that follow from it" not in rule and "first step that is false" in rule
    # Its examples label the first false step and later false steps, not every later step.
    for example in examples("missing_condition"):
        first, last = min(example.answer.error_steps), len(example.answer.modified_process)
        assert set(range(first, last + 1)) - set(example.answer.error_steps), example.question


@pytest.mark.parametrize("category_id", INJECTED)
def test_no_example_labels_a_content_free_step_or_tags_a_non_confidence_error_with_certainty(category_id) -> None:
    for example in examples(category_id):
        assert not any(CONTENT_FREE.match(text) for text in error_texts(example)), example.question
        if category_id != "confidence":
            assert not any(CERTAINTY.search(text) for text in error_texts(example)), example.question


# --- per category ----------------------------------------------------------------------------------------------

def words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]+|\S", text)


MISSING = {  # question -> (removed premise, sympy equation of the problem as posed, what the asked is over)
    "How many positive real numbers $x$ satisfy $x^3 = 2x^2 + 3x$?": ("positive", X**3 - 2 * X**2 - 3 * X, "count"),
    "What is the sum of all values of $x$ such that $(x - 3)^2 = 16$?": ("case split", (X - 3) ** 2 - 16, "sum"),
}


@pytest.mark.parametrize("example", examples("missing_condition"), ids=lambda e: e.question[:30])
def test_a_missing_condition_example_removes_a_named_premise_and_stays_answerable(example: WorkedExample) -> None:
    premise, equation, asked = MISSING[example.question]
    answer = example.answer
    new_question = answer.modified_question or example.question
    assert premise in answer.reason  # the removed premise is named
    if answer.modified_question is not None:
        # Removed, not added (an added premise is counterfactual's outside assumption): every word of the new
        # question is in the old one, and the premise is gone from it.
        assert premise in example.question and premise not in new_question
        assert set(words(new_question)) <= set(words(example.question))
    assert not re.search(r"must be|ruled out|assum", " ".join(error_texts(example)))
    roots = sympy.solve(equation, X)
    true_answer = len(roots) if asked == "count" else sum(roots)
    assert roots and all(r.is_real for r in roots)  # the question as posed is answerable
    assert str(true_answer) != final_answer_of_steps(list(answer.modified_process))  # and the error changes it


def test_the_missing_condition_template_adds_no_outside_assumption() -> None:
    text = (Path(TAXONOMY.template_path(TAXONOMY.category("missing_condition")))).read_text(encoding="utf-8")
    assert "assume one it does not give" not in text
    assert "outside assumption the question does not give (that is counterfactual)" in text


def test_a_deception_trap_alters_one_given_and_removes_no_premise() -> None:
    text = system("deception")
    assert "a condition quietly changed" not in text
    traps = [e for e in examples("deception") if e.answer.modified_question is not None]
    near_misses = [e for e in examples("deception") if e.answer.modified_question is None]
    assert near_misses and len(traps) <= len(near_misses)  # mostly near-misses, as in PRMBench
    for example in traps:
        old, new = words(example.question), words(example.answer.modified_question or "")
        assert len(old) == len(new) and sum(a != b for a, b in zip(old, new)) == 1  # one given altered
        assert not {"complex", "real"} & (set(old) ^ set(new))  # not a change of domain
    # The trap's arithmetic: with the ninth term the ratio is 8^(1/4) and the first term 7!/8 = 630, not 315.
    r4 = sympy.Rational(sympy.factorial(8), sympy.factorial(7))
    assert sympy.factorial(7) / r4 == 630 != 315


@pytest.mark.parametrize("example", examples("redundancy"), ids=lambda e: e.question[:30])
def test_a_redundancy_step_avoids_the_giveaway_words_its_prompt_forbids(example: WorkedExample) -> None:
    template = Path(TAXONOMY.template_path(TAXONOMY.category("redundancy"))).read_text(encoding="utf-8")
    forbidden = re.findall(r'"([^"]+)"', template.split("giveaway wording such as", 1)[1].split(":", 1)[0])
    assert {"again", "check", "verify"} <= set(forbidden)
    for text in error_texts(example):
        assert not any(re.search(rf"\b{re.escape(w)}\b", text, re.I) for w in forbidden), text
        assert text not in example.steps  # inserted, and true (the validator keeps the final answer)


CONFIDENCE = {  # question -> the correct rule or value the confident step must not state; (true, false) answers
    "Find the value of $x$ that satisfies": ("\\frac{5}{9}", sympy.Eq((3 * X + 5) * 9, 5 * (6 * X + 5)),
                                             sympy.Eq((3 * X + 5) * 3, 5 * (6 * X + 5)), "-\\frac{10}{21}"),
    "How many positive divisors does $72$": ("0 \\le", None, None, "6"),
}


@pytest.mark.parametrize("example", examples("confidence"), ids=lambda e: e.question[:30])
def test_a_confidence_example_is_overconfident_and_does_not_state_the_correct_rule(example: WorkedExample) -> None:
    key = next(k for k in CONFIDENCE if example.question.startswith(k))
    correct, true_eq, false_eq, false_answer = CONFIDENCE[key]
    first = example.answer.modified_process[min(example.answer.error_steps) - 1]
    assert CERTAINTY.search(first), first
    assert correct not in first
    # Not a step contradiction: no step before the error is changed, so no earlier value is taken back.
    assert example.answer.modified_process[:min(example.answer.error_steps) - 1] == \
        example.steps[:min(example.answer.error_steps) - 1]
    assert final_answer_of_steps(list(example.answer.modified_process)) == false_answer
    if true_eq is not None:
        assert sympy.solve(true_eq, X) == [sympy.Rational(20, 3)]
        assert sympy.solve(false_eq, X) == [sympy.Rational(-10, 21)]
    else:
        assert sympy.divisor_count(72) == 12 and (3 + 1 - 1) * (2 + 1 - 1) == 6


CIRCULAR = {  # question prefix -> (what the first error step assumes, what the last one "derives", as sympy)
    "Find the value of $x$": ("x=\\dfrac{20}{3}", "20=3x", sympy.Eq(20, 3 * X), sympy.Rational(20, 3)),
    "What is the sum of all multiples": ("1683", "33 \\cdot 51 = 1683", sympy.Eq(X, 33 * 51), 1683),
}


@pytest.mark.parametrize("example", examples("circular_logic"), ids=lambda e: e.question[:30])
def test_a_circular_examples_labelled_steps_close_the_loop(example: WorkedExample) -> None:
    key = next(k for k in CIRCULAR if example.question.startswith(k))
    assumed, closing, equation, value = CIRCULAR[key]
    errors = sorted(example.answer.error_steps)
    assert errors == list(range(errors[0], errors[-1] + 1))  # one unbroken chain
    process = example.answer.modified_process
    assert assumed in process[errors[0] - 1] and closing in process[errors[-1] - 1]
    assert sympy.solve(equation, X) == [value]  # the closing step gives back the assumed value
    # The step the reason says closes the loop (the last step named before "clos...") is labelled.
    reason = example.answer.reason
    end = re.search(r"clos|conclud", reason)
    if end:
        assert int(re.findall(r"[Ss]tep (\d+)", reason[:end.start()])[-1]) in errors, reason
    assert final_answer_of_steps(list(process)) == final_answer_of_steps(list(example.steps))


def test_domain_inconsistency_examples_are_right_in_the_rules_own_domain() -> None:
    i = sympy.I
    conjugate, base = examples("domain_inconsistency")[:2]
    numerator = sympy.expand((1 - i) * (2 - 3 * i))
    assert numerator == -1 - 5 * i
    assert sympy.expand((2 + 3 * i) * (2 - 3 * i)) == 13  # the true denominator
    carried = 2**2 - abs(3 * i) ** 2  # "a square equals the square of the absolute value": true for reals only
    assert all(r**2 == abs(r) ** 2 for r in (-3, 0, sympy.Rational(5, 2))) and carried == -5
    result = sympy.nsimplify(numerator / carried)
    assert sympy.fraction(sympy.together(result))[1].has(i) is False  # no complex denominator is left
    assert sympy.simplify(result - (1 + 5 * i) / 5) == 0
    assert final_answer_of_steps(list(conjugate.answer.modified_process)) == "\\frac{1+5i}{5}"
    assert "{-5+12i}" not in " ".join(conjugate.answer.modified_process)
    # The digit-sum test holds in base ten for every number below 1000 and fails for 1213 in base five.
    assert all(n % 3 == sum(map(int, str(n))) % 3 for n in range(1000))
    assert int("1213", 5) == 183 and 183 % 3 == 0 and (1 + 2 + 1 + 3) % 3 == 1
    assert final_answer_of_steps(list(base.answer.modified_process)) == "1"


# --- a unit never sees its own problem ---------------------------------------------------------------------------

def prmbench_trajectory(idx: str) -> Trajectory:
    with open(FIXTURES / "prm800k_train_p1_first400_4o_confidence.jsonl", encoding="utf-8") as handle:
        record = next(r for r in map(json.loads, handle) if r["idx"] == idx)
    return Trajectory(id=idx, question=record["original_question"], steps=list(record["original_process"]))


@pytest.mark.parametrize("mode", ["full", "edits"])
@pytest.mark.parametrize("category_id", [c.id for c in TAXONOMY.categories])
def test_a_unit_never_sees_its_own_problem_as_a_worked_example(category_id: str, mode: str) -> None:
    own = prmbench_trajectory("prm_train_p1_2")
    text = system(category_id, own, mode)
    shown = re.findall(r"<question>\n(.*?)\n</question>", text, re.S)
    assert shown, category_id  # another example is shown instead
    assert own.question.strip() not in shown
    category = TAXONOMY.category(category_id)
    if any(e.question == own.question for e in category.examples):
        assert len(shown) == len(category.examples) - 1
        assert len(examples_for(category, "  " + own.question.upper() + " ")) == len(shown)  # normalised text
    else:
        assert len(shown) == len(category.examples)
