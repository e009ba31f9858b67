"""Offline step_contradiction operators."""
from __future__ import annotations

import random

from ...trajectory import Trajectory
from .text import NUMBER, RESULT, Option, Perturbation, perturb_number, replace, replace_span, split_answer

def step_contradiction_options(trajectory: Trajectory) -> list[Option]:
    """A later step restates a value an earlier step derived, but differently."""
    options: list[Option] = []
    bodies = [split_answer(step) for step in trajectory.steps]
    for i, (earlier, _) in enumerate(bodies):
        derived = {m.group(1) for m in RESULT.finditer(earlier)}
        for j in range(i + 1, len(bodies)):
            body, tail = bodies[j]
            for match in NUMBER.finditer(body):
                if match.group(0) not in derived:
                    continue

                def option(rng: random.Random, i=i, j=j, body=body, tail=tail, match=match) -> Perturbation:
                    old = match.group(0)
                    new = perturb_number(old, rng)
                    text = replace_span(body, match.start(), match.end(), new) + tail
                    return Perturbation("restate_inconsistently", [replace(j + 1, text)],
                                        f"Step {j + 1} uses {new} for the value that step {i + 1} found to be {old}.")
                options.append(option)
    return options
