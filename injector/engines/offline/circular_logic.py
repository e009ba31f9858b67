"""Offline circular_logic operators."""
from __future__ import annotations

import random

from ...answers import final_answer_of_steps
from ...trajectory import Trajectory
from .text import Option, Perturbation, insert, replace, split_answer

def last_reasoning_step(steps: list[str]) -> int | None:
    """Index of the last step with text besides its `# Answer` tail (a step that is only `# Answer\n3` is not)."""
    return next((index for index in range(len(steps) - 1, -1, -1) if split_answer(steps[index])[0].strip()), None)


def circular_logic_options(trajectory: Trajectory) -> list[Option]:
    """Assume the final answer early, then let the last reasoning step "confirm" it by that assumption."""
    answer = trajectory.answer or final_answer_of_steps(list(trajectory.steps))
    steps = trajectory.steps
    confirming = last_reasoning_step(steps)  # the answer step itself stays as it is
    if answer is None or confirming is None or confirming < 1:
        return []
    which = "the last step" if confirming == len(steps) - 1 else f"step {confirming + 1}"
    options: list[Option] = []
    for position in range(0, max(1, confirming // 2)):
        def option(rng: random.Random, position=position) -> Perturbation:
            assumed = (f"We know the final answer must be ${answer}$, so we take ${answer}$ as given and check "
                       "that the remaining steps agree with it.")
            body, tail = split_answer(steps[confirming])
            confirmed = (body.rstrip() + f" This agrees with the value ${answer}$ we started from, which confirms "
                         f"that ${answer}$ is the answer." + tail)
            return Perturbation("assume_the_answer",
                                [insert(position + 1, assumed), replace(confirming + 1, confirmed)],
                                f"The step inserted after step {position + 1} assumes the final answer {answer} "
                                f"before deriving it, and {which} confirms the answer by that assumption: the "
                                "conclusion supports itself.")
        options.append(option)
    return options
