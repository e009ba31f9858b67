"""Every validator rule, with passing and failing cases, and the step alignment it rests on."""
from __future__ import annotations

import pytest

from injector.answer.align import align_steps, normalize_step
from injector.answer.contract import FullAnswer, MultiSolutionAnswer
from injector.taxonomy import Taxonomy
from injector.model.trajectory import Trajectory
from injector.inject.validation import validate_answer

STEPS = [
    "7.8 minutes is the same as 7 minutes and 0.8 minutes.",
    "There are 60 * 7 = 420 seconds in 7 minutes.",
    "There are 60 * 0.8 = 48 seconds in 0.8 minutes.",
    "So in total there are 420 + 48 = 468 seconds.\n\n# Answer\n\n468",
]
QUESTION = "How many seconds are in 7.8 minutes?"
TRAJECTORY = Trajectory(id="t1", question=QUESTION, steps=STEPS, answer="468")


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return Taxonomy.load()


def check(taxonomy, category_id, process, modified_steps, error_steps, question=QUESTION, trajectory=TRAJECTORY):
    answer = FullAnswer(modified_question=question, modified_process=process, modified_steps=modified_steps,
                        error_steps=error_steps, reason="because")
    return validate_answer(taxonomy, taxonomy.category(category_id), trajectory, answer)


def replaced(index: int, text: str) -> list[str]:
    process = list(STEPS)
    process[index - 1] = text
    return process


WRONG_STEP_3 = "There are 60 * 0.8 = 42 seconds in 0.8 minutes."


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("Step 3. Add them.", "Add them"),
        ("Step 3: Add them", "Add them"),
        ("3. Add  them.", "Add them"),
        ("3) Add them", "Add them"),
        ("3: Add them", "Add them"),
        ("7.8 minutes is 468 seconds.", "7.8 minutes is 468 seconds"),  # a number, not a numbering
        ("  Add\n\n them ...", "Add them"),
    ],
)
def test_normalize_step(text, normalized):
    assert normalize_step(text) == normalized


def test_alignment_replace_insert_delete():
    original = ["a", "b", "c", "d", "e"]
    alignment = align_steps(original, ["a", "B", "x", "d"])
    assert alignment.matched == {0: 0, 3: 3}
    assert alignment.replaced == {1: 1, 2: 2}
    assert alignment.inserted == []
    assert alignment.deleted == [4]
    alignment = align_steps(original, ["a", "b", "new", "c", "d", "e"])
    assert alignment.inserted == [2] and alignment.replaced == {} and alignment.deleted == []


def test_alignment_is_unique_when_steps_repeat():
    # "x" could match either original "x"; the walk skips the original first when that keeps the LCS length.
    alignment = align_steps(["x", "y", "x"], ["y", "x"])
    assert alignment.matched == {0: 1, 1: 2}
    assert alignment.deleted == [0]


def test_clean_replacement_is_accepted(taxonomy):
    verdict = check(taxonomy, "counterfactual", replaced(3, WRONG_STEP_3), [3], [3])
    assert verdict.accepted, verdict.messages
    assert verdict.modified_steps == [3] and verdict.error_steps == [3]


def test_cosmetic_drift_is_restored_and_not_a_change(taxonomy):
    process = replaced(3, WRONG_STEP_3)
    process[0] = "1. 7.8 minutes is the same as 7 minutes and 0.8 minutes"  # numbering and period differ
    verdict = check(taxonomy, "counterfactual", process, [3], [3])
    assert verdict.accepted
    assert verdict.modified_process[0] == STEPS[0]


def test_undeclared_change(taxonomy):
    process = replaced(3, WRONG_STEP_3)
    process[1] = "There are 60 * 7 = 421 seconds in 7 minutes."
    verdict = check(taxonomy, "counterfactual", process, [3], [3])
    assert verdict.codes == ["undeclared_change"]
    assert "step 2" in verdict.messages[0]
    assert verdict.modified_steps == [2, 3]  # emitted indices are the computed ones


def test_index_out_of_range(taxonomy):
    verdict = check(taxonomy, "counterfactual", replaced(3, WRONG_STEP_3), [3], [3, 5])
    assert "index_out_of_range" in verdict.codes
    verdict = check(taxonomy, "counterfactual", replaced(3, WRONG_STEP_3), [0, 3], [3])
    assert verdict.codes == ["index_out_of_range"]


def test_empty_step(taxonomy):
    verdict = check(taxonomy, "redundancy", [*STEPS[:2], " . ", *STEPS[2:]], [3], [3])
    assert "empty_step" in verdict.codes


def test_no_error_steps(taxonomy):
    verdict = check(taxonomy, "counterfactual", replaced(3, WRONG_STEP_3), [3], [])
    assert verdict.codes == ["no_error_steps"]


def test_error_on_unchanged_step(taxonomy):
    verdict = check(taxonomy, "counterfactual", replaced(3, WRONG_STEP_3), [3], [3, 4])
    assert verdict.codes == ["error_on_unchanged_step"]
    # missing_condition allows it: the first step relying on a removed condition may be unchanged.
    verdict = check(taxonomy, "missing_condition", list(STEPS), [], [2], question="How many seconds are in minutes?")
    assert verdict.accepted, verdict.messages
    assert verdict.modified_question == "How many seconds are in minutes?"


def test_question_edit(taxonomy):
    edited = "How many seconds are in 7.9 minutes?"
    verdict = check(taxonomy, "counterfactual", replaced(3, WRONG_STEP_3), [3], [3], question=edited)
    assert verdict.codes == ["question_edit_not_allowed"]
    verdict = check(taxonomy, "deception", replaced(3, WRONG_STEP_3), [3], [3], question=edited)
    assert verdict.accepted and verdict.modified_question == edited
    # Whitespace-only drift is not an edit, and the original text is kept.
    verdict = check(taxonomy, "counterfactual", replaced(3, WRONG_STEP_3), [3], [3], question=QUESTION + "  ")
    assert verdict.accepted and verdict.modified_question == QUESTION


@pytest.mark.parametrize(
    "leaky",
    [
        "Let's incorrectly say there are 60 * 0.8 = 42 seconds.",
        "There are 60 * 0.8 = 42 seconds (Incorrect step here).",
        "By mistake, there are 42 seconds in 0.8 minutes.",
        "There are 42 seconds in 0.8 minutes [error introduced].",
        "There are 42 seconds in 0.8 minutes (error: should be 48).",
        "We deliberately use 42 seconds.",
        "There are 42 seconds, BY ERROR.",
    ],
)
def test_label_leak(taxonomy, leaky):
    verdict = check(taxonomy, "counterfactual", replaced(3, leaky), [3], [3])
    assert verdict.codes == ["label_leak"]


def test_label_leak_needs_whole_words_and_changed_steps(taxonomy):
    # "wrongful" is not "wrong"; unchanged steps are never checked.
    verdict = check(taxonomy, "counterfactual", replaced(3, "A wrongful 60 * 0.8 = 42 seconds."), [3], [3])
    assert verdict.accepted
    steps = [*STEPS[:1], "Avoid the wrong path: 60 * 7 = 420 seconds.", *STEPS[2:]]
    trajectory = Trajectory(id="t2", question=QUESTION, steps=steps, answer="468")
    process = list(steps)
    process[2] = WRONG_STEP_3
    verdict = check(taxonomy, "counterfactual", process, [3], [3], trajectory=trajectory)
    assert verdict.accepted


def test_category_leak_phrases_extend_the_list(taxonomy):
    custom = taxonomy.model_copy(deep=True)
    custom.path = taxonomy.path
    custom.category("counterfactual").label_leak_phrases.append("oops")
    verdict = check(custom, "counterfactual", replaced(3, "Oops, 60 * 0.8 = 42."), [3], [3])
    assert verdict.codes == ["label_leak"]


def test_deletions_are_warnings_unless_forbidden(taxonomy):
    process = [STEPS[0], STEPS[1], WRONG_STEP_3]  # last step deleted
    verdict = check(taxonomy, "counterfactual", process, [3], [3])
    assert verdict.accepted
    assert verdict.deleted_steps == [4] and verdict.warnings == ["deleted original steps: 4"]
    strict = taxonomy.model_copy(deep=True)
    strict.path = taxonomy.path
    strict.category("counterfactual").rules.allow_deletions = False
    verdict = check(strict, "counterfactual", process, [3], [3])
    assert verdict.codes == ["deletion_not_allowed"]


def test_every_failing_rule_is_reported(taxonomy):
    process = replaced(3, "We incorrectly get 42 seconds.")
    process[1] = "There are 421 seconds in 7 minutes."
    verdict = check(taxonomy, "counterfactual", process, [3], [], question="Other question?")
    assert set(verdict.codes) == {"undeclared_change", "no_error_steps", "question_edit_not_allowed", "label_leak"}


def multi(taxonomy, process, trajectory=TRAJECTORY):
    answer = MultiSolutionAnswer(modified_process=process, reason="another method")
    return validate_answer(taxonomy, taxonomy.category("multi_solution"), trajectory, answer)


NEW_SOLUTION = [
    "One minute is 60 seconds, so 7.8 minutes is 7.8 times 60 seconds.",
    "7.8 times 60 is 78 times 6, which is 468.",
    "So 7.8 minutes is $\\boxed{468}$ seconds.",
]


def test_multi_solution_accepted(taxonomy):
    verdict = multi(taxonomy, NEW_SOLUTION)
    assert verdict.accepted, verdict.messages
    assert verdict.modified_steps == [] and verdict.error_steps == [] and verdict.warnings == []


def test_multi_solution_answer_mismatch_and_unknown(taxonomy):
    assert multi(taxonomy, [*NEW_SOLUTION[:2], "So it is $\\boxed{467}$ seconds."]).codes == ["answer_mismatch"]
    assert multi(taxonomy, [*NEW_SOLUTION[:2], "So it is 468 seconds."]).codes == ["answer_unknown"]
    # Without a known answer the original's final answer comes from its last step.
    unknown = Trajectory(id="t3", question=QUESTION, steps=STEPS, answer=None)
    assert multi(taxonomy, NEW_SOLUTION, unknown).accepted
    no_answer = Trajectory(id="t4", question=QUESTION, steps=STEPS[:3], answer=None)
    assert multi(taxonomy, NEW_SOLUTION, no_answer).codes == ["answer_unknown"]


def test_multi_solution_not_different(taxonomy):
    process = [STEPS[0], STEPS[1], "Step 3. There are 60 * 0.8 = 48 seconds in 0.8 minutes", "$\\boxed{468}$"]
    assert multi(taxonomy, process).codes == ["not_different"]
    # Exactly half repeated is still different enough.
    assert multi(taxonomy, [STEPS[0], STEPS[1], *NEW_SOLUTION[1:]]).accepted
