"""Offline circular_logic operators: a result's derivation is replaced by a loop.

The step that derives a result is replaced by a step that takes the result as given, followed by a step that
"derives" it back from that assumption (substituting it into the equation it should solve, or undoing the
computation that should have produced it), and concludes the value it started from. The final answer and every
other step stay as they were. Wording is drawn from small pools of plain connectives that the original solutions
also use, so that the loop is found by reading the mathematics, not the words.
"""
from __future__ import annotations

import random

from injector.model.trajectory import Trajectory
from injector.engines.offline.equations import Computation, Solved, computations, determines, introduced, inverse_equations, \
    own_sentence, solved_values, stated_quantity, substituted
from injector.engines.offline.wording import styled
from injector.engines.offline.text import Option, Perturbation, insert, replace, split_answer

# Wording: frames that PRM800K's own steps use about as often as these pools do ("so", "that means", "we know
# that", "if ... then", "and"), several per move, so that no word is found only in the loop's steps. Words such as
# "hence", "suppose", "plugging in", "this gives" or "is the solution" are (nearly) absent from the solutions and
# gave the loop away to the cue probe (`inject stats --cues`).
# The assumption: the bare value, or framed as something known.
ASSUME_VALUE = ("So ${var} = {value}$.", "${var} = {value}$.", "We know that ${var} = {value}$.",
                "That means ${var} = {value}$.", "And ${var} = {value}$.", "So we have ${var} = {value}$.",
                "Right, so ${var} = {value}$.", "So ${var}$ is ${value}$.")
DERIVE_VALUE = ("So ${filled}$, and ${var} = {value}$.",
                "That means ${filled}$, so ${var} = {value}$.",
                "If ${var} = {value}$, then ${filled}$, so ${var} = {value}$.",
                "Since ${filled}$, we know that ${var} = {value}$.",
                "And ${equation}$ is ${filled}$, so ${var} = {value}$.",
                "${filled}$, so ${var} = {value}$.",
                "So ${equation}$ is ${filled}$, which means that ${var} = {value}$.",
                "We know ${filled}$, so ${var} = {value}$.",
                "Then ${filled}$, so ${var}$ is ${value}$.")
# The bare clause (no framing word at all) is the commonest form: it reads like any other step.
ASSUME_CLAUSE = ("{Clause}.", "{Clause}.", "So {clause}.", "We know that {clause}.", "And {clause}.",
                 "That means {clause}.", "Right, so {clause}.")
DERIVE_CLAUSE = ("So ${inverse}$, and {clause}.", "That means ${inverse}$, so {clause}.",
                 "Since ${inverse}$, {clause}.", "And ${inverse}$, so {clause}.", "${inverse}$, so {clause}.",
                 "We know ${inverse}$, so {clause}.", "Then ${inverse}$, so {clause}.",
                 "So ${inverse}$, which means {clause}.", "That's because ${inverse}$, so {clause}.")


def circular_logic_options(trajectory: Trajectory) -> list[Option]:
    """One option per result a step derives (a variable's value, or a computation of a stated quantity) that is
    new in that step; steps carrying the `# Answer` line are left alone, so the final answer step is unchanged."""
    steps = list(trajectory.steps)
    options: list[Option] = []
    for index, step in enumerate(steps):
        body, tail = split_answer(step)
        if tail or index == len(steps) - 1:
            continue
        for solved in solved_values(steps, trajectory.question, index):
            if determines(solved):
                options.append(_loop_on_value(index, solved, step))
        earlier = trajectory.question + " " + " ".join(steps[:index])
        for computation in computations(body, index):
            loop = _loop_on_computation(body, computation, earlier)
            if loop is not None:
                options.append(loop)
    return styled(options, steps)


def _loop_on_value(index: int, solved: Solved, step: str) -> Option:
    # The assumption must replace the step, not repeat it ("That means $r = 2$." for "That means $r = 2$.").
    forms = [form for form in ASSUME_VALUE if form.format(var=solved.var, value=solved.value) != step.strip()]

    def option(rng: random.Random) -> Perturbation:
        var, value, filled = solved.var, solved.value, substituted(solved)
        assumed = rng.choice(forms).format(var=var, value=value)
        derived = rng.choice(DERIVE_VALUE).format(var=var, value=value, filled=filled,
                                                  equation=f"{solved.left} = {solved.right}")
        return Perturbation("assume_the_value", [replace(index + 1, assumed), insert(index + 1, derived)],
                            f"Step {index + 1} no longer solves for ${var}$: it takes ${var} = {value}$ as given, and "
                            f"the next step substitutes that value into ${solved.left} = {solved.right}$ and "
                            f"concludes ${var} = {value}$ from it. The value rests only on itself: the chain loops "
                            "back to its assumption.")
    return option


def _loop_on_computation(body: str, computation: Computation, earlier: str) -> Option | None:
    """Assume the computed quantity ("Suppose the total cost is $14.60$ dollars") and recover one of the known
    operands from it ("Then $14.60 - 3.60 = 11$"), concluding the assumed quantity."""
    if not introduced(computation.value, earlier):
        return None
    stated = stated_quantity(body, computation)
    if stated is None:
        return None
    clause = stated.clause(computation.value)
    inverses = inverse_equations(computation.lhs, computation.value, earlier)
    if not inverses:
        return None

    def option(rng: random.Random) -> Perturbation:
        inverse = stated.math(rng.choice(inverses))
        own = own_sentence(body, stated, computation.value)
        if own is not None and rng.random() < 0.5:
            assumed = own + "."  # the step's own sentence, its computation gone: the value stated bare
        else:
            assumed = rng.choice(ASSUME_CLAUSE).format(clause=clause, Clause=clause[:1].upper() + clause[1:])
        derived = rng.choice(DERIVE_CLAUSE).replace("${inverse}$", "{inverse}").format(inverse=inverse, clause=clause)
        step = computation.step + 1
        return Perturbation("assume_the_result", [replace(step, assumed), insert(step, derived)],
                            f"Step {step} no longer computes {stated.math(computation.lhs)}: it takes {clause} as given, "
                            f"and the next step works back from that value ({inverse}) to conclude the same value. "
                            "The result rests only on itself: the chain loops back to its assumption.")
    return option
