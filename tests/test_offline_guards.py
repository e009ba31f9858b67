"""The guards every answer-changing offline perturbation passes (injector/engines/offline/plausible.py), an
independent final-answer check over candidates, and regressions for the sources a reviewer found wrong
(tests/fixtures/offline_regressions/named-failures.jsonl, PRMBench / PRM800K, see ATTRIBUTION.md)."""
from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from injector import Taxonomy, inject_one, load_trajectories
from injector.engines.offline import WITHDRAWN_OPERATORS
from injector.answer.final import final_answer_of_steps
from injector.engines.offline import OfflineEngine
from injector.engines.offline.plausible import cleanly_delimited, implausible, letter_answer, refusal
from injector.records.models import Candidate

NAMED = Path(__file__).parent / "fixtures" / "offline_regressions" / "named-failures.jsonl"
ANSWER_CHANGING = ("counterfactual", "step_contradiction", "confidence")


def test_unbalanced_dollars_and_bare_latex_are_not_cleanly_delimited():
    assert cleanly_delimited("So $4! = 24$ and $2 + 2 = 4$.")
    assert not cleanly_delimited("So $4! = 4+3+2+1 = 10 and more")
    assert not cleanly_delimited("The answer is \\frac{639}{40}.")
    assert cleanly_delimited("Costs \\$5 in all.")


def test_letters_and_implausible_results_are_found():
    assert letter_answer(["So the answer is $\\boxed{D}$."]) and letter_answer(["# Answer\n\n(B)"])
    assert not letter_answer(["So the answer is $\\boxed{12}$."])
    assert implausible("The volume is $30-95=-65$ cubic inches.") == "a negative length, area or volume"
    assert implausible("So $\\angle B = 256^\\circ$.") == "an angle over 180 degrees"
    assert implausible("It turns through $400^\\circ$.") == "an angle over 360 degrees"
    assert implausible("It turns through $270^\\circ$.") is None
    assert implausible("There are $6! = 21$ orders.") == "6! stated as 21"
    assert implausible("There are $6! = 720$ orders, and $x = -3$.") is None
    assert refusal(["$a = 2$.", "# Answer\n\n2"], ["$a = 3$.", "# Answer\n\n3"], [1, 2]) is None
    assert refusal(["$a = 2$.", "\\boxed{C}"], ["$a = 3$.", "\\boxed{C}"], [1]) is not None


def _candidates(trajectories, category_id: str, samples: int) -> list[tuple]:
    taxonomy, engine = Taxonomy.load(), OfflineEngine(operators=WITHDRAWN_OPERATORS)
    category = taxonomy.category(category_id)
    found = []
    for trajectory in trajectories:
        for sample in range(samples):
            record = asyncio.run(inject_one(taxonomy, category, trajectory, engine, seed=0, sample=sample))
            if isinstance(record, Candidate):
                found.append((trajectory, record))
    return found


def _letter(steps: list[str]) -> str | None:
    """Independent of the guard: the last `\\boxed{X}` or `# Answer` letter A-E in the solution."""
    answer = final_answer_of_steps(steps) or ""
    match = re.fullmatch(r"\W*(?:\\text(?:bf)?\{)?\W*([A-E])\W*", answer)
    return match.group(1) if match else None


@pytest.mark.parametrize("category_id", ANSWER_CHANGING)
def test_no_answer_changing_candidate_keeps_a_stale_letter_on_the_named_sources(category_id):
    trajectories = list(load_trajectories(NAMED))
    assert any(_letter(t.steps) for t in trajectories)  # prm_train_p1_116 ends in \boxed{D}
    for trajectory, candidate in _candidates(trajectories, category_id, samples=3):
        assert _letter(candidate.original_process) is None, (trajectory.id, candidate.modified_process)
        assert not any(implausible(step) for step in candidate.modified_process), trajectory.id


def test_missing_condition_is_withdrawn_from_the_offline_engine():
    reason = OfflineEngine().unsupported_reason(Taxonomy.load().category("missing_condition"))
    assert reason is not None and "needs a model" in reason
