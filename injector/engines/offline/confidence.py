"""Offline confidence operators."""
from __future__ import annotations

import random

from ...trajectory import Trajectory
from .numerical_calculation import numerical_calculation_options
from .text import CERTAINTY, Option, Perturbation, lower_first

def confidence_options(trajectory: Trajectory) -> list[Option]:
    def certain(option: Option) -> Option:
        def wrapped(rng: random.Random) -> Perturbation | None:
            perturbation = option(rng)
            if perturbation is None:
                return None
            edit = perturbation.edits[0]
            phrase = rng.choice(CERTAINTY)
            edit["text"] = phrase + lower_first(edit["text"])
            perturbation.operator = "confident_false_result"
            perturbation.reason += f" The step asserts this with unwarranted certainty ({phrase.strip(' ,')!r})."
            return perturbation
        return wrapped

    return [certain(option) for option in numerical_calculation_options(trajectory)]
