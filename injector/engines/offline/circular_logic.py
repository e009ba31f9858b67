"""Offline circular_logic operators: a result's derivation is replaced by a loop.

The step that derives a result is replaced by a step that takes the result as given; what follows "derives" it
back from that assumption (substituting it into the equation it should solve, or undoing the computation that
should have produced it, with operands the solution established earlier as quantities) and concludes the value it
started from. Two shapes: the loop in two steps (the assumption; the derivation and conclusion in one step) or in
three (the assumption; the derivation; the conclusion on its own). The final answer and every other step stay as
they were. Wording is drawn from small pools of plain connectives that the original solutions also use, so that
the loop is found by reading the mathematics, not the words.
"""
from __future__ import annotations

import random

from injector.model.trajectory import Trajectory
from injector.engines.offline.equations import Computation, Solved, computations, determines, introduced, inverse_equations, \
    own_sentence, solved_values, stated_quantity, substituted
from injector.engines.offline.positions import Placed
from injector.engines.offline.wording import fitted, styled
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
# The three-step loop: the value put back (no conclusion yet), then the conclusion on its own.
LEAN_VALUE = ("So ${filled}$.", "Then ${filled}$.", "That means ${filled}$.", "And ${equation}$ is ${filled}$.",
              "If ${var} = {value}$, then ${filled}$.", "We have ${filled}$.")
CONCLUDE_VALUE = ("So ${var} = {value}$.", "That means ${var} = {value}$.", "So ${var}$ is ${value}$.",
                  "Right, so ${var} = {value}$.", "Therefore ${var} = {value}$.", "And so ${var} = {value}$.")
LEAN_CLAUSE = ("So ${inverse}$.", "That means ${inverse}$.", "Then ${inverse}$.", "And ${inverse}$.",
               "We know ${inverse}$.", "We have ${inverse}$.")
CONCLUDE_CLAUSE = ("So {clause}.", "That means {clause}.", "{Clause}.", "Right, so {clause}.",
                   "Therefore {clause}.", "And so {clause}.")
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
    lengths = [len(step) for step in steps]
    options: list[Option] = []
    for index, step in enumerate(steps):
        body, tail = split_answer(step)
        if tail or index == len(steps) - 1:
            continue
        for solved in solved_values(steps, trajectory.question, index):
            # The equation the loop puts the value back into must stay written: one the replaced step wrote
            # itself would leave the loop leaning on operands established nowhere.
            before = "".join(split_answer(steps[index - 1])[0].split()) if index else ""
            if determines(solved) and "".join(f"{solved.left}={solved.right}".split()) in before:
                options.append(Placed(_loop_on_value(index, solved, step, lengths), index + 1, len(steps) + 1))
        earlier = trajectory.question + " " + " ".join(steps[:index])
        for computation in computations(body, index):
            loop = _loop_on_computation(body, computation, earlier, lengths)
            if loop is not None:
                options.append(Placed(loop, index + 1, len(steps) + 1))
    return styled(options, steps)


def _loop_on_value(index: int, solved: Solved, step: str, lengths: list[int]) -> Option:
    # The assumption must replace the step, not repeat it ("That means $r = 2$." for "That means $r = 2$.").
    forms = [form for form in ASSUME_VALUE if form.format(var=solved.var, value=solved.value) != step.strip()]

    def option(rng: random.Random) -> Perturbation:
        var, value, filled = solved.var, solved.value, substituted(solved)
        fields = {"var": var, "value": value, "filled": filled, "equation": f"{solved.left} = {solved.right}"}
        # The loop's steps written the way whose length fits the solution's steps (`fitted`); loop steps shorter
        # than the solution's own gave them away by length alone. The assumption is drawn uniformly: fitting it
        # too made its longest frame the commonest, a cue to the word probe.
        assumed = rng.choice(forms).format(var=var, value=value)
        if rng.random() < 0.5:
            loop = [insert(index + 1, fitted(rng, [f.format(**fields) for f in DERIVE_VALUE], lengths))]
        else:
            loop = [insert(index + 1, fitted(rng, [f.format(**fields) for f in LEAN_VALUE], lengths)),
                    insert(index + 1, fitted(rng, [f.format(**fields) for f in CONCLUDE_VALUE], lengths))]
        return Perturbation("assume_the_value", [replace(index + 1, assumed), *loop],
                            f"Step {index + 1} no longer solves for ${var}$: it takes ${var} = {value}$ as given, and "
                            f"what follows substitutes that value into ${solved.left} = {solved.right}$ and "
                            f"concludes ${var} = {value}$ from it. The value rests only on itself: the chain loops "
                            "back to its assumption.")
    return option


def _loop_on_computation(body: str, computation: Computation, earlier: str, lengths: list[int]) -> Option | None:
    """Assume the computed quantity ("Suppose the total cost is $14.60$ dollars") and recover one of the known
    operands from it ("Then $14.60 - 3.60 = 11$"), concluding the assumed quantity."""
    if not introduced(computation.value, earlier):
        return None
    stated = stated_quantity(body, computation)
    if stated is None:
        return None
    clause = stated.clause(computation.value)
    inverses = inverse_equations(computation.lhs, computation.value, earlier, strict=True)
    if not inverses:
        return None

    def option(rng: random.Random) -> Perturbation:
        inverse = stated.math(rng.choice(inverses))
        own = own_sentence(body, stated, computation.value)
        fields = {"inverse": inverse, "clause": clause, "Clause": clause[:1].upper() + clause[1:]}
        if own is not None and rng.random() < 0.5:
            assumed = own + "."  # the step's own sentence, its computation gone: the value stated bare
        else:
            assumed = rng.choice(ASSUME_CLAUSE).format(**fields)
        step = computation.step + 1

        def written(frames: tuple[str, ...]) -> str:
            return fitted(rng, [f.replace("${inverse}$", "{inverse}").format(**fields) for f in frames], lengths)
        if rng.random() < 0.5:
            loop = [insert(step, written(DERIVE_CLAUSE))]
        else:
            loop = [insert(step, written(LEAN_CLAUSE)), insert(step, written(CONCLUDE_CLAUSE))]
        return Perturbation("assume_the_result", [replace(step, assumed), *loop],
                            f"Step {step} no longer computes {stated.math(computation.lhs)}: it takes {clause} as given, "
                            f"and what follows works back from that value ({inverse}) to conclude the same value. "
                            "The result rests only on itself: the chain loops back to its assumption.")
    return option
