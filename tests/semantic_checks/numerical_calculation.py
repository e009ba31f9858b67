"""numerical_calculation (ProJudge's arithmetic slip): the first error step states an equation that is false when
evaluated; every later error step is recomputed from it (its equations hold); the error reaches the answer."""
from __future__ import annotations

from injector import Trajectory

from ._arithmetic import false_equations, propagation_problems


def check(original: Trajectory, candidate: dict) -> list[str]:
    if not candidate["error_steps"]:
        return ["no error step"]
    first = min(candidate["error_steps"])
    step = candidate["modified_process"][first - 1]
    problems = []
    if not false_equations(step):
        problems.append(f"the slipped step {first} has no false equation: {step!r}")
    if false_equations(original.steps[first - 1]):
        problems.append(f"step {first} was already false in the original")
    return problems + propagation_problems(list(original.steps), candidate, first)
