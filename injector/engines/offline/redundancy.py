"""Offline redundancy operators."""
from __future__ import annotations

import random

from ...trajectory import Trajectory
from .text import MATH_WITH_EQUALS, RESTATEMENTS, Option, Perturbation, insert, split_answer

def redundancy_options(trajectory: Trajectory) -> list[Option]:
    """Insert, right after a step that derives an equation, a step that only restates it."""
    options: list[Option] = []
    for index, step in enumerate(trajectory.steps[:-1]):
        for match in MATH_WITH_EQUALS.finditer(split_answer(step)[0]):
            def option(rng: random.Random, index=index, math=match.group(1).strip()) -> Perturbation:
                inserted = rng.choice(RESTATEMENTS).replace("{math}", math)
                return Perturbation("restate_result", [insert(index + 1, inserted)],
                                    f"The step inserted after step {index + 1} only restates its result; removing it "
                                    "changes nothing.")
            options.append(option)
    return options
