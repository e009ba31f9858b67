"""The offline engine: picks an operator's option for a unit, deterministically, and answers in the same JSON
an LLM would write."""
from __future__ import annotations

import copy
import json
import random
from typing import Any, Callable

from injector.answer.contract import Edit
from injector.answer.edits import apply_edits
from injector.taxonomy import Category
from injector.model.trajectory import Trajectory
from injector.engines.base import Engine, NotApplicable, Proposal
from injector.engines.offline.circular_logic import circular_logic_options
from injector.engines.offline.confidence import confidence_options
from injector.engines.offline.counterfactual import counterfactual_options
from injector.engines.offline.numerical_calculation import numerical_calculation_options
from injector.engines.offline.plausible import refusal
from injector.engines.offline.positions import ordered
from injector.engines.offline.redundancy import redundancy_options
from injector.engines.offline.step_contradiction import step_contradiction_options
from injector.engines.offline.text import Option, Perturbation

OPERATORS_VERSION = "7"

OPERATORS: dict[str, Callable[[Trajectory], list[Option]]] = {
    "redundancy": redundancy_options,
    "circular_logic": circular_logic_options,
    "numerical_calculation": numerical_calculation_options,  # ProJudge's arithmetic slip
}
# Rule-based operators whose items are right by their category checks but carry a cue a probe finds better than in
# PRMBench's GPT-4o data on the test part of the sources, or are too few there to tell (docs/offline-engine-quality.md):
# withdrawn rather than shipped as a benchmark's negatives. They stay for custom use: `OfflineEngine(operators=WITHDRAWN_OPERATORS)`.
WITHDRAWN_OPERATORS: dict[str, Callable[[Trajectory], list[Option]]] = {
    "step_contradiction": step_contradiction_options,
    "confidence": confidence_options,
    "counterfactual": counterfactual_options,
}
WITHDRAWN = {
    "step_contradiction": "its error steps' position finds the error better than in PRMBench's GPT-4o data",
    "confidence": "its error steps' wording finds the error better than in PRMBench's GPT-4o data",
    # Its guards (recompute every changed number, or refuse) leave 3 items on the 197 test-part problems: too few
    # for the cue probes, so nothing shows its items are no easier to spot than GPT-4o's.
    "counterfactual": "it makes too few items (1 % of the test part's problems) to measure its cues",
}
NEEDS_A_MODEL = {
    "deception": "a subtle, plausible-looking error needs a model's judgement",
    "multi_solution": "writing a different correct solution needs a model",
    # No rule-based move was found that carries a rule across domains where it fits and then recomputes the rest
    # of the solution honestly (dropping a \pm, the old move, is a missing condition, and only sometimes an error).
    "domain_inconsistency": "carrying a rule into a domain where it fails, and through the rest of the solution, "
                            "needs a model",
    # The rule-based moves (dropping "positive" or "nonzero" from the question) could not tell which later steps
    # the missing condition makes false, nor bind the condition to the variable a step reasons about: withdrawn
    # rather than shipped wrong (`missing_condition_options` stays for custom use through `operators=`).
    "missing_condition": "removing a premise and telling which later steps it makes false needs a model",
    **{category: f"withdrawn from the offline engine ({why}; docs/offline-engine-quality.md): it needs a model"
       for category, why in WITHDRAWN.items()},
}
# Categories whose error changes the final answer: each perturbation of theirs passes `plausible.refusal`.
ANSWER_CHANGING = {"counterfactual", "step_contradiction", "confidence", "missing_condition",
                   "numerical_calculation"}


def _refused(trajectory: Trajectory, perturbation: Perturbation) -> bool:
    applied = apply_edits(list(trajectory.steps), [Edit.model_validate(e) for e in perturbation.edits])
    return refusal(list(trajectory.steps), applied.modified_process, applied.modified_steps) is not None


class OfflineEngine(Engine):
    """Deterministic rule-based injection: the same trajectory, category, seed and sample give the same answer.

    `operators` adds (or replaces) operators by category id: a function from a trajectory to its options, each a
    function from a seeded `random.Random` to a `Perturbation` (see `counterfactual_options`).
    """

    name = "offline"

    def __init__(self, operators: dict[str, Callable[[Trajectory], list[Option]]] | None = None):
        self.operators = {**OPERATORS, **(operators or {})}
        self._custom = sorted(operators or {})
        self._tried: dict[tuple, dict[int, Perturbation | None]] = {}

    def describe(self) -> dict[str, Any]:
        described: dict[str, Any] = {"engine": self.name, "model": "offline", "api_base_host": None, "operators": OPERATORS_VERSION}
        if self._custom:
            described["custom_operators"] = self._custom
        return described

    def check_ready(self) -> None:
        """Always ready: nothing to configure."""

    def unsupported_reason(self, category: Category) -> str | None:
        """Why this engine cannot make `category` (None when it can)."""
        if category.id in self.operators:
            return None
        return NEEDS_A_MODEL.get(category.id, f"the offline engine has no operator for {category.id!r}")

    def perturb(self, trajectory: Trajectory, category: Category, *, seed: int, sample: int) -> Perturbation:
        """The `sample`-th applicable perturbation in a seeded order (`positions.ordered`: where a category has a
        target, its first error steps fall where PRMBench's do); NotApplicable when there is none left.

        An option may return None (not applicable, e.g. its change cannot be carried consistently through the
        later steps): it is skipped, and the next one in the order is tried."""
        options = self.operators[category.id](trajectory)
        # String seeds are hashed with SHA-512 by `random`, so the order is stable across processes and platforms.
        key = f"{seed}\x00{trajectory.id}\x00{category.id}"
        order = ordered(options, category.id, random.Random(f"order\x00{key}"))  # spread like PRMBench's
        # Samples 0, 1, 2 ... of a unit walk the same order: remember what each option gave (a few units back).
        memo_key = (key, trajectory.question, tuple(trajectory.steps))
        tried = self._tried.pop(memo_key, {})
        self._tried[memo_key] = tried
        while len(self._tried) > 16:
            self._tried.pop(next(iter(self._tried)))
        found = 0
        for position in order:
            if position not in tried:
                made = options[position](random.Random(f"edit\x00{key}\x00{position}"))
                if made is not None and category.id in ANSWER_CHANGING and _refused(trajectory, made):
                    made = None
                tried[position] = made
            perturbation = copy.deepcopy(tried[position])
            if perturbation is not None:
                if found == sample:
                    return perturbation
                found += 1
        if not options:
            raise NotApplicable(f"{category.id}: the offline operator found nothing to work on in this trajectory")
        skipped = len(options) - found
        raise NotApplicable(f"{category.id}: the offline operator found only {found} usable place(s) in this "
                            f"trajectory" + (f" ({skipped} other(s) could not be carried consistently through "
                                             "the later steps)" if skipped else ""))

    async def propose(self, messages: list[dict[str, Any]], *, trajectory: Trajectory, category: Category,
                      seed: int, sample: int, response_schema: dict[str, Any] | None,
                      output_mode: str = "edits", read_cache: bool = True) -> Proposal:
        perturbation = self.perturb(trajectory, category, seed=seed, sample=sample)
        # Every error edit explains itself (taxonomies such as projudge require it): the operator's reason.
        edits = [{**edit, "explanation": perturbation.reason} if edit.get("error") or edit["op"] == "flag" else edit
                 for edit in perturbation.edits]
        if output_mode == "edits":
            answer: dict[str, Any] = {"question": perturbation.question, "edits": edits,
                                      "reason": perturbation.reason}
        else:  # the full form is the edits applied: one source of truth for both contracts
            applied = apply_edits(list(trajectory.steps), [Edit.model_validate(e) for e in edits])
            answer = {
                "modified_question": perturbation.question if perturbation.question is not None
                else trajectory.question,
                "modified_process": applied.modified_process,
                "modified_steps": applied.modified_steps,
                "error_steps": applied.error_steps,
                "reason": perturbation.reason,
                "explanations": {str(step): text for step, text in applied.explanations.items()},
            }
        return Proposal(text=json.dumps(answer, ensure_ascii=False), cost=0.0,
                        details={"operator": perturbation.operator})


def from_settings(settings: Any) -> OfflineEngine:
    """The `offline` kind's factory (`engines/registry.py`): it has no settings of its own."""
    return OfflineEngine()
