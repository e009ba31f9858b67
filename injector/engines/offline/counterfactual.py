"""Offline counterfactual (and ProJudge numerical_calculation) operators."""
from __future__ import annotations

import random

from ...trajectory import Trajectory
from .text import RESULT, Option, Perturbation, perturb_number, replace, replace_span, split_answer

def counterfactual_options(trajectory: Trajectory) -> list[Option]:
    options: list[Option] = []
    for index, step in enumerate(trajectory.steps):
        body, tail = split_answer(step)
        for match in RESULT.finditer(body):
            def option(rng: random.Random, index=index, body=body, tail=tail, match=match) -> Perturbation:
                old = match.group(1)
                new = perturb_number(old, rng)
                text = replace_span(body, match.start(1), match.end(1), new) + tail
                return Perturbation("change_result", [replace(index + 1, text)],
                                    f"Step {index + 1} states {new} where the correct value is {old}.")
            options.append(option)
    return options
