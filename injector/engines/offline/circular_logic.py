"""Offline circular_logic operators: a result's derivation is replaced by a loop.

The step that derives a result is replaced by a step that takes the result as given; what follows "derives" it
back from that assumption (substituting it into the equation it should solve, or undoing the computation that
should have produced it, with operands the solution established earlier as quantities) and concludes the value it
started from. Two shapes: the loop in two steps (the assumption; the derivation and conclusion in one step), four
times in five, or in three (the assumption; the derivation; the conclusion on its own). The final answer and every
other step stay as they were. Each loop step is one of a few plain frames, opened the way one of the solution's own
steps opens (a solution's first step with nothing), so that the loop is found by reading the mathematics, not the
words.
"""
from __future__ import annotations

import random

from injector.model.trajectory import Trajectory
from injector.engines.offline.equations import Computation, Solved, computations, determines, introduced, inverse_equations, \
    own_sentence, solved_values, stated_quantity, substituted
from injector.engines.offline.positions import Placed
from injector.engines.offline.wording import fitted, opened, opener_like, styled, unopened
from injector.engines.offline.text import Option, Perturbation, insert, replace, split_answer

# Wording. Each loop step is a frame that opens with no connective of its own (or with the few a conclusion
# carries), after an opener drawn from the solution's own steps (`wording.opener_like`: "So ", "Right, so ", most
# often nothing), so that the loop's steps open with "so", "and" or "right" as often as the solution's own steps
# do; the first step of a solution opens with none (nothing precedes it). Frames that gave the loop away to the cue
# probe (`inject stats --cues`) are gone: every step opening with a connective, "therefore", and the stilted
# "So $r^3 = 8$ is $2^3 = 8$" ("so is" was the probe's strongest feature). Words the solutions (nearly) never write
# ("hence", "suppose", "plugging in", "this gives", "verify", "assume") are left out for the same reason.
# The assumption: the bare value, or stated as something known.
ASSUME_VALUE = ("${var} = {value}$.", "${var} = {value}$.", "We have ${var} = {value}$.",
                "We know that ${var} = {value}$.")
DERIVE_VALUE = ("${filled}$, so ${var} = {value}$.", "Since ${filled}$, ${var} = {value}$.",
                "If ${var} = {value}$, then ${filled}$, so ${var} = {value}$.",
                "${var} = {value}$, since ${filled}$.", "${filled}$, which gives ${var} = {value}$.",
                "${var} = {value}$ because ${filled}$.", "${filled}$, and so ${var} = {value}$.")
# The three-step loop: the value put back (no conclusion yet), then the conclusion on its own.
LEAN_VALUE = ("${filled}$.", "If ${var} = {value}$, then ${filled}$.", "We have ${filled}$.",
              "With ${var} = {value}$, ${equation}$ gives ${filled}$.")
CONCLUDE_VALUE = ("${var} = {value}$.", "${var} = {value}$.", "So ${var} = {value}$.", "That means ${var} = {value}$.")
# The bare clause (no framing word at all) is the commonest form: it reads like any other step.
ASSUME_CLAUSE = ("{Clause}.", "{Clause}.", "{Clause}.", "We know that {clause}.")
DERIVE_CLAUSE = ("${inverse}$, so {clause}.", "Since ${inverse}$, {clause}.", "{Clause}, since ${inverse}$.",
                 "{Clause} because ${inverse}$.", "${inverse}$, which means {clause}.", "{Clause}, as ${inverse}$.",
                 "If {clause}, then ${inverse}$, so {clause}.")
LEAN_CLAUSE = ("${inverse}$.", "If {clause}, then ${inverse}$.", "{Clause}, so ${inverse}$.", "We have ${inverse}$.")
CONCLUDE_CLAUSE = ("{Clause}.", "{Clause}.", "{Clause}.", "So {clause}.", "That means {clause}.")
# The share of loops in two steps. The three-step loop puts two short steps in a row ("$r^3 = 8$." then "That
# means $r = 2$."), so with half the loops in three steps the loop's steps ran shorter than the solution's own (dev
# part: 53 % at 40 characters or fewer against 31 %) and a probe that sees only a step's length found them (dev,
# four seeds pooled: AUC 0.55 at a half, 0.50 at 0.8; the word probe unchanged, 0.81 and 0.82).
TWO_STEP = 0.8


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
            # The equation the loop puts the value back into must stay written: one the replaced step wrote
            # itself would leave the loop leaning on operands established nowhere.
            before = "".join(split_answer(steps[index - 1])[0].split()) if index else ""
            if determines(solved) and "".join(f"{solved.left}={solved.right}".split()) in before:
                options.append(Placed(_loop_on_value(index, solved, steps), index + 1, len(steps) + 1))
        earlier = trajectory.question + " " + " ".join(steps[:index])
        for computation in computations(body, index):
            loop = _loop_on_computation(body, computation, earlier, steps)
            if loop is not None:
                options.append(Placed(loop, index + 1, len(steps) + 1))
    return styled(options, steps, openers=False)


def _loop_on_value(index: int, solved: Solved, steps: list[str]) -> Option:
    # The assumption must replace the step, not repeat it ("That means $r = 2$." for "That means $r = 2$.").
    forms = [form for form in ASSUME_VALUE if form.format(var=solved.var, value=solved.value) != steps[index].strip()]

    def option(rng: random.Random) -> Perturbation:
        var, value, filled = solved.var, solved.value, substituted(solved)
        fields = {"var": var, "value": value, "filled": filled, "equation": f"{solved.left} = {solved.right}"}
        assumed = rng.choice(forms).format(var=var, value=value)
        if rng.random() < TWO_STEP:
            loop = [[f.format(**fields) for f in DERIVE_VALUE]]
        else:
            loop = [[f.format(**fields) for f in LEAN_VALUE], [f.format(**fields) for f in CONCLUDE_VALUE]]
        return Perturbation("assume_the_value", _edits(rng, steps, index, assumed, loop),
                            f"Step {index + 1} no longer solves for ${var}$: it takes ${var} = {value}$ as given, and "
                            f"what follows substitutes that value into ${solved.left} = {solved.right}$ and "
                            f"concludes ${var} = {value}$ from it. The value rests only on itself: the chain loops "
                            "back to its assumption.")
    return option


def _edits(rng: random.Random, steps: list[str], index: int, assumed: str, loop: list[list[str]]) -> list[dict]:
    """The assumption replacing step `index + 1`, and the loop's steps after it, each written one of its ways.

    Each step opens as one of the solution's own steps drawn at random does (`opener_like`), and the first step of a
    solution with no connective at all. The loop's later steps take, of two ways drawn, the one nearer a length
    drawn from the solution's own steps (`fitted`): loop steps shorter than the solution's own gave them away by
    length alone. The assumption is not fitted: that made its longest frame the commonest, a cue to the word probe."""
    lengths = [len(step) for step in steps]
    bare = unopened(assumed) if index == 0 else assumed
    assumed = bare if index == 0 else opened(opener_like(rng, steps), assumed)
    if assumed == steps[index].strip():  # "So $r = 2$." opened back into the step it replaces
        assumed = bare
    later = []
    for ways in loop:
        # A loop step that says what the replaced step said would leave that step standing: a re-check, not a loop.
        way = fitted(rng, [text for text in ways if text != steps[index].strip()] or ways, lengths)
        text = opened(opener_like(rng, steps), way)
        later.append(way if text == steps[index].strip() else text)
    return [replace(index + 1, assumed), *(insert(index + 1, text) for text in later)]


def _loop_on_computation(body: str, computation: Computation, earlier: str, steps: list[str]) -> Option | None:
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

        def ways(frames: tuple[str, ...]) -> list[str]:
            return [f.replace("${inverse}$", "{inverse}").format(**fields) for f in frames]
        loop = [ways(DERIVE_CLAUSE)] if rng.random() < TWO_STEP else [ways(LEAN_CLAUSE), ways(CONCLUDE_CLAUSE)]
        return Perturbation("assume_the_result", _edits(rng, steps, step - 1, assumed, loop),
                            f"Step {step} no longer computes {stated.math(computation.lhs)}: it takes {clause} as given, "
                            f"and what follows works back from that value ({inverse}) to conclude the same value. "
                            "The result rests only on itself: the chain loops back to its assumption.")
    return option
