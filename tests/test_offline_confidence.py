"""The offline confidence operator (issue 25): a false value is carried through every later use or not at all, and
no certainty phrase, opener or tag marks the error step (the decoys on correct steps draw from the same
repertoire). Named inputs: PRMBench's prm_train_p1_88 (its source solution, PRM800K phase 1, Apache-2.0 via
PRMBench), where "No, there are 8 people left, not 7; that much is certain." was followed by "8 choices for the
first role and 6 for the second", and the bundled sample."""
from __future__ import annotations

import asyncio
import random
import re
from collections import Counter

import pytest
from semantic_checks import checks_for
from test_offline_semantics import prmbench_originals

from injector import OfflineEngine, Taxonomy, Trajectory, inject_one, load_trajectories
from injector.engines.offline import WITHDRAWN_OPERATORS
from injector.engines.offline.certainty import ADVERBS, AT_VERB, CONNECTIVE, OPENERS, certainty_forms
from injector.engines.offline.confidence import _decoys, _false_as_written
from injector.engines.offline.propagate import why_not
from injector.records.models import Candidate

ROLES = Trajectory(id="prm_train_p1_88", question=(
    "A play has two different male roles, two different female roles and two different roles that can be either "
    "gender. Only a man can be assigned to a male role, and only a woman can be assigned to a female role. If five "
    "men and six women audition, in how many ways can the six roles be assigned?"), steps=[
    "Ok, so we have two male roles, two female roles and two other roles.",
    "Yes, so we need to choose the actors for the male and female roles first.",
    "Right, so we have 5 choices for the first male role and 4 choices for the second male role.",
    "So we need to multiply these two numbers together to get the total number of combinations of men.",
    "That would be 5*4=20.",
    "Now we have 6 choices for the first female role and 5 choices for the second female role.",
    "Right, so we need to multiply these two numbers together to get the total number of combinations of women.",
    "That would be 6*5=30.",
    "Now we need to choose the actors for the remaining two roles.",
    "And at the beginning we had 11 people and we have already chosen 2 for male roles and 2 for female roles.",
    "So there are 11-4=7 people left.",
    "And we have 7 choices for the first role and 6 choices for the second.",
    "Right, so we need to multiply these two numbers together to get the total number of combinations for these "
    "two roles.",
    "That would be 7*6=42.",
    "Now we need to multiply all of our results together to get the total number of combinations.",
    "So it would be 20*30*42=25200.",
    "Right so there are 25200 ways to assign the six roles."])


def candidates(trajectories: list[Trajectory], samples: int = 4) -> list[tuple[Trajectory, Candidate]]:
    taxonomy = Taxonomy.load()
    category, engine = taxonomy.category("confidence"), OfflineEngine(operators=WITHDRAWN_OPERATORS)
    made = []
    for trajectory in trajectories:
        for sample in range(samples):
            record = asyncio.run(inject_one(taxonomy, category, trajectory, engine, seed=0, sample=sample))
            if not isinstance(record, Candidate):
                break
            made.append((trajectory, record))
    return made


def test_a_value_derived_in_words_from_the_changed_one_refuses_the_change():
    steps = list(ROLES.steps)
    reason = why_not(steps, 10, "So there are 11-4=8 people left.", question=ROLES.question)
    assert reason is not None and "keeps 6, derived from 7 in words" in reason


def test_the_roles_problem_never_carries_the_false_value_half_way():
    made = candidates([ROLES], samples=8)
    check = checks_for("confidence").check
    for trajectory, candidate in made:
        record = candidate.model_dump(mode="json")
        assert check(trajectory, record) == []
        text = " ".join(candidate.modified_process)
        # Every false count of people left would leave "6 choices for the second" or "7*6" half-carried.
        assert "people left" not in candidate.modified_process[min(candidate.error_steps) - 1] or \
            "7 choices for the first role and 6" in text
        assert not re.search(r"\bnot 7\b|^No,|Correction:|That is not right", text, re.M)


def test_the_semantic_check_catches_a_value_carried_half_way():
    """The independent check (tests/semantic_checks/confidence.py) rejects the item the review found."""
    steps = list(ROLES.steps)
    steps[10] = "It is certain that there are 8 people left."
    steps[11] = "And we have 8 choices for the first role and 6 choices for the second."
    steps[13] = "That would be 8*6=48."
    steps[15] = "So it would be 20*30*48=28800."
    steps[16] = "Right so there are 28800 ways to assign the six roles."
    steps[4] = "That would be 5*4=20, no doubt about it."
    record = {"modified_process": steps, "error_steps": [11, 12, 14, 16, 17], "modified_steps": [5, 11, 12, 14, 16, 17]}
    problems = checks_for("confidence").check(ROLES, record)
    assert any("keeps 6, derived from the true 7" in p for p in problems)


def test_no_certainty_phrase_marks_the_error_step():
    made = candidates(list(load_trajectories()) + [ROLES], samples=3)
    assert len(made) >= 15
    on_error: Counter = Counter()
    on_correct: Counter = Counter()
    phrases = [p.split("{")[0].strip(" ,") for p in OPENERS] + list(ADVERBS) + list(AT_VERB) + ["must be"]
    for _, candidate in made:
        first = min(candidate.error_steps)
        for k in candidate.modified_steps:
            text = candidate.modified_process[k - 1]
            found = {p for p in phrases if p.lower() in text.lower()}
            (on_error if k == first else on_correct).update(found)
        assert "as is certain" not in " ".join(candidate.modified_process)
    # No phrase is on more than a quarter of the error steps, and the phrases seen on error steps are, taken
    # together, at least as common on correct steps (the decoys).
    assert max(on_error.values()) <= len(made) / 4
    assert sum(on_correct.values()) >= sum(on_error.values())
    assert len(on_error) >= 10  # a repertoire, not a template


# The tags the operator bolted on after a statement before (issue 25): by their words alone they marked the error
# step (the dev part's word probe fell from 0.83 to 0.78 with them struck out), and they read as stuck on.
OLD_TAGS = ("no doubt about it", "for sure", "without a doubt", "beyond any doubt", "there's no question",
            "no question about it", "I'm sure of it", "that's certain", "as is certain", "That much is certain",
            "There is no doubt about it", "That is definitely right", "No need to check this", "This is beyond doubt",
            "I'm sure of this", "That's for sure", "There is no question about it", "This is clearly right",
            "It can't be anything else", "No further check is needed", "We can be completely sure of that",
            "This is obviously true", "Nothing more needs to be said about it")
TAG_AT_THE_END = re.compile(r"(?:,\s*|[.!]\s+)(?:" + "|".join(map(re.escape, OLD_TAGS)) + r")[.!]?\s*$", re.IGNORECASE)


def test_no_confidence_item_ends_a_step_with_a_bolted_on_certainty_tag():
    made = candidates(list(load_trajectories()) + [ROLES], samples=3)
    assert len(made) >= 10
    check = checks_for("confidence").check
    for trajectory, candidate in made:
        assert check(trajectory, candidate.model_dump(mode="json")) == []
        for k in candidate.modified_steps:
            body = candidate.modified_process[k - 1].split("# Answer")[0].strip()
            assert not TAG_AT_THE_END.search(body), body


def test_correct_steps_carry_certainty_several_times_as_often_as_the_error_step():
    # One to three decoys left each certainty phrase on the error step in one case of two or three (dev part: 53
    # of 144 certainty-bearing steps were error steps), so the phrases themselves pointed at the error (word AUC
    # 0.78 on the dev part, four seeds pooled; 0.65 with the decoys below, 0.72 with the phrases struck out).
    # PRMBench's fixture solutions are longer than the bundled sample's (whose short solutions leave one or two
    # correct steps to say anything with certainty): 19 decoys on 11 items before, 30 now.
    made = candidates(prmbench_originals(), samples=3)
    assert len(made) >= 10
    declared = [len([k for k in c.modified_steps if k not in c.error_steps]) for _, c in made]
    assert max(declared) <= 5  # a solution is not all certainty
    assert sum(declared) >= 2.5 * len(made), declared  # about a third of the steps, two at least, where they allow


def test_decoys_say_certainty_in_the_error_steps_kind_of_form():
    # The error step is a stated result ("So the total is ..."), so it took the connective's adverbs or an adverb
    # at its copula; decoys on whatever steps were at hand took openers ("Without question, ...") and other forms.
    steps = list(ROLES.steps)
    for seed in range(20):
        for declared in _decoys(steps, [], 16, "connective", random.Random(seed)):
            original = steps[declared["step"] - 1]
            connective = CONNECTIVE.match(original)
            if connective:
                adverb = declared["text"][connective.end(1):].split(" " + original[connective.end():][:8])[0]
                assert adverb.strip() in ADVERBS, declared["text"]
        chosen = {d["step"] - 1 for d in _decoys(steps, [], 16, "connective", random.Random(seed))}
        able = {k for k in range(16) if "connective" in certainty_forms(steps[k], random.Random(0))}
        assert chosen <= able or able <= chosen, (chosen, able)  # the error step's kind first


def test_no_certainty_on_a_step_that_is_false_as_written():
    # prm_train_p1_125's step 14 (PRM800K phase 1, via PRMBench): "\\sqrt{2^2 + 9^2} = \\sqrt{97}" is false, and a
    # decoy made it "certainly" so; the category check rejected the item.
    step = ("The intersection of $\\ell_A$ and $\\ell_C$ is at $(9,9)$. The distance is then "
            "$\\sqrt{(9-11)^2 + (9-0)^2} = \\sqrt{2^2 + 9^2} = \\sqrt{97}$.")
    assert _false_as_written(step, 13)
    assert not _false_as_written("So $\\sqrt{4} = 2$ and $x = 3$.", 1)
    steps = ["We have $a = 2$.", "So the sum is $2 + 2 = 4$.", step, "Then the product is $2 \\cdot 3 = 6$.",
             "So the total is $6 + 4 = 10$."]
    for seed in range(20):
        assert 3 not in {d["step"] for d in _decoys(steps, [], 4, "copula", random.Random(seed))}
