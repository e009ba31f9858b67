"""The `repeat-step` engine: answers a `redundancy` unit with the original solution and one of its steps said
again right after itself. A worked example of a new engine (docs/extending.md, "A new engine"): this file and its
test are all it took; `registry.py` lists it by name so `--model repeat-step` selects it.
"""
from __future__ import annotations

import json
import random
from typing import Any

from injector.engines.base import Engine, NotApplicable, Proposal
from injector.engines.settings import EngineSettings
from injector.model.trajectory import Trajectory
from injector.taxonomy import Category


class RepeatStepEngine(Engine):
    """Repeats one step (chosen by the seed and sample, never the last one, which states the answer)."""

    name = "repeat-step"

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name, "model": self.name, "api_base_host": None}

    def unsupported_reason(self, category: Category) -> str | None:
        return None if category.id == "redundancy" else "the repeat-step engine only makes redundancy"

    async def propose(self, messages: list[dict[str, Any]], *, trajectory: Trajectory, category: Category,
                      seed: int, sample: int, response_schema: dict[str, Any] | None,
                      output_mode: str = "edits", read_cache: bool = True) -> Proposal:
        candidates = list(range(1, len(trajectory.steps)))  # 1-based steps before the last one
        if sample >= len(candidates):
            raise NotApplicable(f"redundancy: only {len(candidates)} step(s) to repeat in this trajectory")
        random.Random(f"{seed}\x00{trajectory.id}").shuffle(candidates)
        step = candidates[sample]
        reason = f"Step {step + 1} repeats step {step}: it adds nothing and can be removed."
        edit = {"op": "insert", "after": step, "text": trajectory.steps[step - 1], "error": True,
                "explanation": reason}
        if output_mode == "edits":
            answer: dict[str, Any] = {"question": None, "edits": [edit], "reason": reason}
        else:
            steps = list(trajectory.steps)
            steps.insert(step, steps[step - 1])
            answer = {"modified_question": trajectory.question, "modified_process": steps,
                      "modified_steps": [step + 1], "error_steps": [step + 1], "reason": reason,
                      "explanations": {str(step + 1): reason}}
        return Proposal(text=json.dumps(answer, ensure_ascii=False), cost=0.0, details={"repeated_step": step})


def from_settings(settings: EngineSettings) -> RepeatStepEngine:
    """The factory `registry.py` names for the `repeat-step` kind (it takes no settings)."""
    return RepeatStepEngine()
