"""Offline confidence operator: a false result asserted with certainty in place of its derivation; the false value
is carried through every later use to the final answer, or the option is not applicable.

On a step that computes a quantity, the computation is dropped and a wrong value is asserted with certainty ("So
clearly the total cost is $15.60$ dollars."). Later steps are recomputed from the wrong value (`propagate`, which
also refuses a value carried half-way: "8 choices for the first role and 6 for the second", the 6 derived in words
from the old 7). The same repertoire of certainty phrases (`certainty.py`), in the error step's kind of form, goes
on about a third of the correct steps of the same solution (declared edits that are not errors), so that certainty
alone does not give the error step away.

A confident "correction" of a correct result (the step kept, a new step asserting another value) was offered
before: its "No, ..., not 7" templates marked the error step by their words alone, and the kept step and its
correction contradict each other (step_contradiction's error): withdrawn.
"""
from __future__ import annotations

import random
import re
from fractions import Fraction

from injector.model.trajectory import Trajectory
from injector.engines.offline.certainty import certainty_forms, with_certainty
from injector.engines.offline.equations import Computation, computations, evaluate, holds, introduced, \
    solved_values, stated_quantity, top_level_split
from injector.engines.offline.latex_values import render
from injector.engines.offline.numerical_calculation import slip_decimal, slipped
from injector.engines.offline.positions import Placed
from injector.engines.offline.propagate import carried_on, final_answer_changed, propagate
from injector.engines.offline.text import Option, Perturbation, replace_span, split_answer

__all__ = ["confidence_options", "with_certainty"]

# How many correct steps get certainty besides the error step: about this share of the solution's steps, two at
# least and MOST at most, where the steps allow. With one to three, each certainty phrase sat on an error step in one
# case of two or three, and the phrases pointed at the error (dev part, eight seeds pooled: word AUC 0.78 -> 0.65).
DECOYS, MOST = 0.3, 5


def confidence_options(trajectory: Trajectory) -> list[Option]:
    steps = list(trajectory.steps)
    options: list[Option] = []
    for index, step in enumerate(steps):
        body, tail = split_answer(step)
        for computation in computations(body, index):
            bare = _bare(body, computation)
            if bare is None:
                continue
            options.append(Placed(_option(trajectory, index, computation, bare), index + 1, len(steps)))
        for solved in solved_values(steps, trajectory.question, index):
            value_start = body.rfind(solved.value, solved.start, solved.end)
            # The solved value as a computation of nothing: the whole step gives way to the bare assertion.
            as_computation = Computation(index, solved.var, solved.value, solved.start, value_start + len(solved.value),
                                         value_start, True)
            options.append(Placed(_option(trajectory, index, as_computation, (0, len(body), f"${solved.var} = "),
                                          solved=True), index + 1, len(steps)))
    return options


def _bare(body: str, computation: Computation) -> tuple[int, int, str] | None:
    """(start, end, kept) of the math to replace by `kept` + the new value: the whole computation when the words
    around it state the quantity, else everything after the chain's first expression when that expression names
    the quantity (`\\binom{5}{2} = \\frac{5 \\cdot 4}{2} = 10` -> `\\binom{5}{2} = ...`)."""
    stated = stated_quantity(body, computation)
    if stated:
        return stated.start, stated.end, stated.name
    if not computation.in_math:
        return None
    math_start = body.rfind("$", 0, computation.start) + 1
    chain = body[math_start: computation.end].split("=")
    # The first expression names the quantity only when it is one term: `\\sqrt{961}+106` is a computation, and
    # asserting a value for it would be a false derivation, not a bare assertion.
    if len(chain) >= 3 and re.match(r"\s*(?:\\binom|\\sqrt|\\lfloor|[a-zA-Z]\(|\\frac\{\\|[a-zA-Z]\s*$)", chain[0]) \
            and len(top_level_split(chain[0].strip(), r"[-+*/]|\\cdot|\\times|\\div")) == 1:
        return math_start, computation.end, chain[0].rstrip() + " = "
    return None


def _false_value(old: str, written: str, rng: random.Random) -> str | None:
    """A false value for `old`, written like it, that is not some other quantity of the solution already."""
    for _ in range(5):
        if "." in old:
            new = slip_decimal(old, rng)
        else:
            value = evaluate(old)
            new = render(slipped(Fraction(int(value.p), int(value.q)), rng), old, in_math=True)
        if new != old and introduced(new, written):
            return new
    return None


def _decoys(steps: list[str], edits: list[dict], index: int, kind: str, rng: random.Random) -> list[dict]:
    """Certainty on about a third of the correct steps the edits leave alone (`DECOYS`; declared edits that are not
    errors), said in the error step's kind of form (`kind`: an adverb after "So", an opener, an adverb at the verb)
    where the step allows it, else in one it allows: each kind has its own phrases, and decoys on whatever steps
    were at hand said certainty in other kinds than the error step, so that a phrase could point at the error."""
    touched = {e.get("step") for e in edits if e["op"] == "replace"}
    forms = {k: certainty_forms(steps[k], rng) for k in range(len(steps)) if k + 1 not in touched and k != index}
    candidates = [k for k in forms if forms[k]]
    rng.shuffle(candidates)
    candidates.sort(key=lambda k: kind not in forms[k])  # the error step's kind first (a stable sort)
    declared, wanted = [], min(MOST, max(2, round(DECOYS * len(steps)) + rng.choice((-1, 0, 0, 1))))
    for k in candidates:
        if _false_as_written(split_answer(steps[k])[0], k):
            continue  # no certainty on a false step: "546/3 * 7 * 13 = 2" (meaning 546/(3*7*13))
        certain = forms[k].get(kind) or forms[k][rng.choice(sorted(forms[k]))]
        declared.append({"op": "replace", "step": k + 1, "text": certain, "error": False})
        if len(declared) == wanted:
            break
    return declared


def _false_as_written(body: str, step: int) -> bool:
    """Does the step write an equality of two numbers that is false: a computation ("546/3 * 7 * 13 = 2") or
    two numeric sides of one `$...$` ("$\\sqrt{2^2 + 9^2} = \\sqrt{97}$", which `computations` does not read)?"""
    if any(not holds(c.lhs, c.value) for c in computations(body, step)):
        return True
    for math in re.findall(r"(?<!\\)\$([^$]+)(?<!\\)\$", body):
        sides = math.split("=")
        if any(evaluate(a) is not None and evaluate(b) is not None and not holds(a, b)
               for a, b in zip(sides, sides[1:])):
            return True
    return False


def _option(trajectory: Trajectory, index: int, computation: Computation, bare: tuple[int, int, str],
            solved: bool = False) -> Option:
    steps = list(trajectory.steps)
    body, tail = split_answer(steps[index])

    def option(rng: random.Random) -> Perturbation | None:
        old = computation.value
        new = _false_value(old, trajectory.question + " " + " ".join(steps[: index + 1]), rng)
        if new is None:
            return None
        new_tail = tail.replace(old, new) if tail and tail.strip().endswith(old) else tail
        slipped_step = replace_span(body, computation.value_start, computation.end, new) + new_tail
        edits = propagate(steps, index, slipped_step, question=trajectory.question)
        if edits is None or not final_answer_changed(steps, edits):
            return None
        start, end, kept = bare
        if solved:  # "So $4x = 150$ and $x = 37.5$." -> "So clearly $x = 38$."
            forms = certainty_forms(rng.choice(("So ", "Then ", "This gives ")) + kept + new + "$." + new_tail, rng)
        else:
            forms = certainty_forms(body[:start] + kept + new + body[end:] + new_tail, rng)
        if not forms:
            return None
        kind = rng.choice(sorted(forms))
        edits[0]["text"] = forms[kind]
        declared = _decoys(steps, edits, index, kind, rng)
        if not declared:
            return None  # certainty on the error step alone would give it away
        what = (f"Step {index + 1} no longer computes the value: it asserts {new} with certainty, and the value is "
                f"{old}.")
        return Perturbation("confident_false_result", edits + declared, what + carried_on(edits) +
                            " The certainty on the other changed steps sits on true statements.")
    return option
