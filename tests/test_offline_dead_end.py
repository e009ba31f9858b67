"""step_contradiction's dead-end conflicts (issue 25, the cue probes' position): a conflicting step that nothing
later builds on is the only error step, and the answer stays; PRMBench's contradictions seldom reach the last
step, and offline ones that always did were found by position alone. A step that may state the answer is never
taken for a dead end."""
from __future__ import annotations

import asyncio

from semantic_checks import checks_for

from injector import OfflineEngine, Taxonomy, Trajectory, inject_one
from injector.engines.offline import WITHDRAWN_OPERATORS
from injector.records.models import Candidate

# PRM800K (MIT licence) phase-1 training solution prm_train_p1_118: steps 11-14 check the answer; step 12's sum is
# used by nothing later, so a conflicting value there is a dead end and the answer (step 15) stays.
CHECKED = Trajectory(id="checked", question="The sum of two numbers is $30$. If we double the larger number, and "
                     "subtract three times the smaller number, the result is 5. What is the positive difference "
                     "between the two numbers?", steps=[
                         "We have two equations here. The first is $x + y = 30$.",
                         "The second equation is $2x - 3y = 5$.",
                         "We can solve for $x$ in the first equation, which gives us $x = 30 - y$.",
                         "And substituting that into the second equation gives us $2(30-y) - 3y = 5$.",
                         "So, $60 - 5y = 5$, and $5y = 55$, which means $y = 11$.",
                         "So $x = 30 - 11$ which means $x = 19$.",
                         "To find the positive difference we do $x - y = 19 - 11 = 8$.",
                         "Right. Don't forget to check your answer though.",
                         "Ok. So the first equation is $19 + 11 = 30$, which is true.",
                         "The second equation is $2 \\cdot 19 - 3 \\cdot 11 = 38 - 33 = 5$.",
                         "So our answer is indeed $8$."])


def _candidates(trajectory: Trajectory, category_id: str) -> list[Candidate]:
    taxonomy = Taxonomy.load()
    category, engine, found = taxonomy.category(category_id), OfflineEngine(operators=WITHDRAWN_OPERATORS), []
    for sample in range(12):
        record = asyncio.run(inject_one(taxonomy, category, trajectory, engine, seed=0, sample=sample))
        if isinstance(record, Candidate):
            found.append(record)
    return found


def test_a_dead_end_contradiction_is_offered_alone_and_passes_the_check():
    found = _candidates(CHECKED, "step_contradiction")
    dead = [c for c in found if c.error_steps == [9]]
    assert dead, [c.error_steps for c in found]
    check = checks_for("step_contradiction")
    for candidate in dead:
        assert candidate.modified_process[-1] == CHECKED.steps[-1]
        assert candidate.modified_steps == [9]
        assert check.check(CHECKED, candidate.model_dump(mode="json")) == []


def test_a_step_stating_the_answer_is_never_a_dead_end():
    # Nothing after step 2 derives a result and there is no `# Answer` line: step 2 may state the answer (it
    # does), so a conflicting value there is not a dead end, though no later step writes 15.
    trajectory = Trajectory(id="ends", question="A point is at $(4,3)$. How far can a dog on a 10-foot rope tied "
                            "there get from the origin?", steps=[
                                "The distance is $\\sqrt{4^2+3^2}=5$.",
                                "Then the greatest distance is $5+10=15$ feet.",
                                "Right, because the rope is 10 feet long."])
    assert [c.error_steps for c in _candidates(trajectory, "step_contradiction")] == []


def test_the_check_takes_a_recheck_arriving_at_an_earlier_result_for_a_dead_end():
    # Step 5 re-checks and arrives at 240, which step 1 derived first: 240 is still step 5's result, and only
    # the 200 it uses is the conflicting value (the check took 240 for one and found no result left).
    original = Trajectory(id="recheck", question="You planned to work 20 hours a week for 12 weeks and lost 2 "
                          "weeks. How many hours a week must you work now?", steps=[
                              "You originally had to work $20*12=240$ hours.",
                              "Since you lost two weeks, you only worked $20*10=200$ hours.",
                              "So you have $240-200=40$ hours left to work.",
                              "With 10 weeks left, that is $40/10=4$ more hours per week.",
                              "Since you already worked 200 hours, you will have worked $200+40=240$ hours.",
                              "So the answer is $4+20=24$ hours per week."])
    steps = list(original.steps)
    steps[4] = "Since you already worked 190 hours, you will have worked $190+40=230$ hours."
    candidate = {"modified_process": steps, "modified_steps": [5], "error_steps": [5]}
    assert checks_for("step_contradiction").check(original, candidate) == []
    carried = [*steps[:5], "So the answer is $4+20=24$ hours per week, after $230$ hours."]
    assert checks_for("step_contradiction").check(original, {**candidate, "modified_process": carried}) != []


def test_a_local_contradiction_labels_exactly_the_conflicting_step_and_keeps_the_answer():
    # Step 7's difference (8) is restated by step 11, so a conflict there was no dead end and was carried to the
    # answer. Local (issue 25): step 7 alone uses another value for y (or x), its own result recomputed; steps 8-11
    # go on from the established values, unchanged and true, and only step 7 is labelled.
    found = _candidates(CHECKED, "step_contradiction")
    at_seven = [c for c in found if min(c.error_steps) == 7]
    assert at_seven and all(c.error_steps == [7] for c in at_seven), [c.error_steps for c in found]
    check = checks_for("step_contradiction")
    for candidate in at_seven:
        assert candidate.modified_steps == [7] and candidate.modified_process[7:] == CHECKED.steps[7:]
        assert "19 - 11" not in candidate.modified_process[6] and "= 8$" not in candidate.modified_process[6]
        assert check.check(CHECKED, candidate.model_dump(mode="json")) == []


def test_the_check_rejects_a_local_contradiction_a_later_step_builds_on():
    steps = list(CHECKED.steps)
    steps[6] = "To find the positive difference we do $x - y = 19 - 12 = 7$."
    local = {"modified_process": steps, "modified_steps": [7], "error_steps": [7]}
    assert checks_for("step_contradiction").check(CHECKED, local) == []
    built_on = [*steps[:10], "So our answer is indeed $7$."]  # step 11 takes up the conflicting result, unlabelled
    problems = checks_for("step_contradiction").check(CHECKED, {**local, "modified_process": built_on,
                                                                  "modified_steps": [7, 11]})
    assert problems
    sloppy = [*steps[:6], "To find the positive difference we do $x - y = 19 - 12 = 8$.", *steps[7:]]
    assert checks_for("step_contradiction").check(CHECKED, {**local, "modified_process": sloppy}) != []


# PRM800K (MIT licence) phase-1 training solution prm_train_p1_99, steps 6-13: a value drawn for the conflict that
# equals the step's own result (30 for 20 in "20+10=30") was recomputed along with it: "40+10=40".
CHECKED_BY_HAND = Trajectory(id="pete", question="Pete thinks of a number. He doubles it, adds 10, multiplies by 4, "
                             "and ends up with 120. What was his original number?", steps=[
                                 "That gives us 8x=80, so x=10.",
                                 "So Pete started with 10.",
                                 "We can check our answer by starting with 10 and performing each of the operations.",
                                 "First he doubled it, which gives us 10*2=20.",
                                 "Then he added 10, which gives 20+10=30.",
                                 "Finally, he multiplied by 4 which gives 30*4=120.",
                                 "So we end up with 120, just like the problem says.",
                                 "So our answer is correct."])


def test_no_conflicting_step_states_a_false_equation():
    import random

    from semantic_checks._arithmetic import false_equations

    from injector.engines.offline.step_contradiction import step_contradiction_options

    made = [option(random.Random(seed)) for option in step_contradiction_options(CHECKED_BY_HAND)
            for seed in range(30)]
    made = [p for p in made if p is not None]
    assert made
    for perturbation in made:
        for edit in perturbation.edits:
            assert false_equations(edit["text"]) == [], edit["text"]
