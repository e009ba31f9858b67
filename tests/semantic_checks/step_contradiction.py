"""step_contradiction: the first error step uses, in place of a value v, another value, where v is a quantity an
earlier unchanged step defines (the result of an equation there, `... = v`, first stated in that step, not given in
the question); later error steps are recomputed (their equations hold); the answer changed where the error
reached it. The error reaches the final answer unless the contradiction is local: the first error step is the only
step changed and the only one labelled, not the last, its own equations hold (its results follow from the
conflicting value), followed by an unchanged `# Answer` line, by a step that derives a result of its own or by one
that restates the step's original result (so it does not state the answer alone), and no value it newly writes is written by any later step, so nothing later builds on
it: the later steps, unchanged and true, go on from the established values."""
from __future__ import annotations

import re

from injector import Trajectory

from ._arithmetic import ANSWER, body, false_equations, math_segments, propagation_problems, split_top

# A fraction of two numbers, or a number (also inside braces, "\\frac{216}{12^3}"; not in an exponent or subscript).
NUMBER = re.compile(r"\\frac\{\d+\}\{\d+\}|(?<![\w.^_])(?<![\^_]\{)\d+(?:\.\d+)?(?![\w.]\d|\d)")


def _value(token: str):
    from fractions import Fraction

    match = re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}", token)
    return Fraction(int(match.group(1)), int(match.group(2))) if match else Fraction(token)


# A minus is a sign where no operand ends right before it, spaces removed ("4 \\cdot (-3)" holds -3, "11 - 8" 8).
SIGNED = re.compile(r"(?<![\w)}.])-(" + NUMBER.pattern + ")")


def _values(text: str) -> set:
    """The values written in a text, each also with its sign where it has one (`x = -3` holds 3 and -3)."""
    # After a LaTeX operator ("8 \\times -\\frac{1}{2}") a minus is a sign, not a subtraction.
    bare = re.sub(r"\\(?:times|cdot|div)(?![A-Za-z])", "*", text.replace(" ", ""))
    return {_value(t) for t in NUMBER.findall(text)} | {-_value(t) for t in SIGNED.findall(bare)}


def defined_in(step: str, v) -> bool:
    """Does the step state v as the result of an equation (the last side of an `=` chain)?"""
    for piece in math_segments(body(step)) + re.findall(r"\d[\d.\s+\-*/()]*=\s*\d+(?:\.\d+)?", body(step)):
        for clause in split_top(piece, ","):
            sides = split_top(clause, "=")
            last = sides[-1].strip().replace("\\$", "")
            sign = -1 if last.startswith("-") else 1
            last = last.lstrip("-").strip()
            if len(sides) >= 2 and NUMBER.fullmatch(last) and sign * _value(last) == v:
                return True
    return False


def check(original: Trajectory, candidate: dict) -> list[str]:
    if not candidate["error_steps"]:
        return ["no error step"]
    first = min(candidate["error_steps"])
    old, new = body(original.steps[first - 1]), body(candidate["modified_process"][first - 1])
    replaced = _values(old) - _values(new)
    problems = []
    established = [v for v in replaced
                   if v not in _values(original.question)
                   and any(defined_in(original.steps[i], v) and not any(v in _values(s) for s in original.steps[:i])
                           for i in range(first - 1))]
    if not established:
        problems.append(f"step {first} replaces {sorted(map(str, replaced))}, none of which an earlier step defines")
    if any(candidate["modified_process"][i] != original.steps[i] for i in range(first - 1)):
        problems.append("a step before the contradiction changed")
    later = propagation_problems(list(original.steps), candidate, first)
    if _local(original, candidate, first):
        later = [p for p in later if not p.startswith("the error does not reach")]
    return problems + later


def _local(original: Trajectory, candidate: dict, first: int) -> bool:
    """Is error step `first` a local contradiction nothing later builds on (see the module docstring)?"""
    steps = candidate["modified_process"]
    if candidate["error_steps"] != [first] or candidate["modified_steps"] != [first] or first >= len(steps) \
            or steps[first:] != list(original.steps[first:]) or len(steps) != len(original.steps):
        return False
    before = original.steps[first - 1]
    results = {v for v in _values(body(before)) if defined_in(before, v)}
    if not ANSWER.search(original.steps[-1]) and not any(
            defined_in(step, v) or v in results for step in original.steps[first:] for v in _values(body(step))):
        return False  # the step may state the answer itself (nothing derived later, its result not restated)
    if len(false_equations(steps[first - 1])) > len(false_equations(before)):
        return False  # its own results must follow from the conflicting value
    written = _values(body(steps[first - 1])) - _values(body(original.steps[first - 1]))
    return bool(written) and not any(written & _values(step) for step in original.steps[first:])
