"""Offline domain_inconsistency operators."""
from __future__ import annotations

import random
import re

from ...trajectory import Trajectory
from .text import Option, Perturbation, replace, split_answer

def domain_inconsistency_options(trajectory: Trajectory) -> list[Option]:
    """Drop the plus-or-minus of a square root (every one in the step), keeping only the positive root."""
    options: list[Option] = []
    plus_minus = re.compile(r"(=\s*)?\\pm(?![A-Za-z])\s*")
    for index, step in enumerate(trajectory.steps):
        body, tail = split_answer(step)
        if not plus_minus.search(body):
            continue

        def option(rng: random.Random, index=index, body=body, tail=tail) -> Perturbation:
            text = plus_minus.sub(lambda m: m.group(1) or "+ ", body) + tail
            return Perturbation("drop_plus_minus", [replace(index + 1, text)],
                                f"Step {index + 1} takes only the positive square root, as if the quantity were "
                                "known to be non-negative; the negative root is lost.")
        options.append(option)
    return options
