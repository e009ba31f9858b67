"""Offline circular_logic operators: a result's derivation is replaced by a loop.

The step that derives a result is replaced by a step that takes the result as given, followed by a step that
"derives" it back from that assumption (substituting it into the equation it should solve, or undoing the
computation that should have produced it), and concludes the value it started from. The final answer and every
other step stay as they were. Wording is drawn from small pools of plain connectives that the original solutions
also use, so that the loop is found by reading the mathematics, not the words.
"""
from __future__ import annotations

import random
import re

from ...trajectory import Trajectory
from .equations import Computation, Solved, computations, evaluate, holds, introduced, latex_number, \
    solved_values, substitute
from .text import NUMBER, Option, Perturbation, insert, lower_first, replace, split_answer

# Leading connectives a clause can shed before it is framed as an assumption ("So the total cost is ...").
CONNECTIVE = re.compile(r"^(?:(?:so|then|thus|hence|and|now|next|finally|first|similarly|therefore|right)\b,?\s*)+",
                        re.IGNORECASE)
# A clause that states a quantity: "the total cost is", "her speed is", "she travels" (not "That gives").
STATES = re.compile(r"^(?:the|her|his|its|their|our|each|one|angle|there|she|he|they|we)\b[^$]*$", re.IGNORECASE)

ASSUME_VALUE = ("Let ${var} = {value}$.", "Take ${var} = {value}$.", "Say ${var} = {value}$.",
                "We can use ${var} = {value}$ here.", "Let's set ${var} = {value}$.", "So let ${var} = {value}$.",
                "We take ${var}$ to be ${value}$.", "Let ${var}$ be ${value}$.")
DERIVE_VALUE = ("Then ${filled}$, so ${var} = {value}$.",
                "This gives ${filled}$, so ${var} = {value}$ is the solution.",
                "With this, ${equation}$ becomes ${filled}$, which is true, so ${var} = {value}$.",
                "Since ${filled}$, we get ${var} = {value}$.",
                "So ${filled}$, and we have ${var} = {value}$.",
                "Plugging in, ${filled}$, so ${var} = {value}$.",
                "Then ${equation}$ reads ${filled}$, which means ${var} = {value}$.")
ASSUME_CLAUSE = ("Suppose {clause}.", "Let's say {clause}.", "Say {clause}.", "We can take it that {clause}.",
                 "Assume {clause}.", "We start from the fact that {clause}.")
DERIVE_CLAUSE = ("Then ${inverse}$, so {clause}.", "This gives ${inverse}$, so {clause}.",
                 "Since ${inverse}$, {clause}.", "So ${inverse}$, which means {clause}.",
                 "With this, ${inverse}$, and so {clause}.", "From this we get ${inverse}$, so {clause}.")


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
            if _determines(solved):
                options.append(_loop_on_value(index, solved))
        earlier = trajectory.question + " " + " ".join(steps[:index])
        for computation in computations(body, index):
            loop = _loop_on_computation(body, computation, earlier)
            if loop is not None:
                options.append(loop)
    return options


def _determines(solved: Solved) -> bool:
    """The equation pins the variable down: it fails for a different value (an identity proves nothing)."""
    other = evaluate(solved.value)
    if other is None:
        return False
    other = latex_number(other + 1)
    return other is not None and not holds(substitute(solved.left, solved.var, other),
                                           substitute(solved.right, solved.var, other))


def _loop_on_value(index: int, solved: Solved) -> Option:
    def option(rng: random.Random) -> Perturbation:
        var, value = solved.var, solved.value
        left = substitute(solved.left, var, value)
        right = substitute(solved.right, var, value)
        if right == solved.right and evaluate(left) is not None and latex_number(evaluate(left)) != right:
            filled = f"{left} = {latex_number(evaluate(left))} = {right}" if latex_number(evaluate(left)) else \
                f"{left} = {right}"
        else:
            filled = f"{left} = {right}"
        assumed = rng.choice(ASSUME_VALUE).format(var=var, value=value)
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
    if not computation.in_math or not introduced(computation.value, earlier):
        return None
    math_start = body.rfind("$", 0, computation.start)
    math_end = body.find("$", computation.end)
    if math_start < 0 or math_end < 0 or body[math_start + 1: computation.start].strip() or \
            body[computation.end: math_end].strip():
        return None  # the math holds more than the computation ("$b = \frac{9-3}{3} = 2$")
    # Of "A, so B is $...$", only the clause that states the quantity is assumed.
    prefix = CONNECTIVE.sub("", re.split(r",\s*(?:so|and|then)\s+", body[:math_start])[-1]).strip()
    suffix = body[math_end + 1:].rstrip().rstrip(".")
    if not STATES.match(prefix) or "$" in suffix:
        return None
    clause = f"{lower_first(prefix)} ${computation.value}${suffix}"
    inverses = _inverses(computation.lhs, computation.value, earlier)
    if not inverses:
        return None

    def option(rng: random.Random) -> Perturbation:
        inverse = rng.choice(inverses)
        assumed = rng.choice(ASSUME_CLAUSE).format(clause=clause)
        derived = rng.choice(DERIVE_CLAUSE).format(inverse=inverse, clause=clause)
        step = computation.step + 1
        return Perturbation("assume_the_result", [replace(step, assumed), insert(step, derived)],
                            f"Step {step} no longer computes ${computation.lhs}$: it takes {clause} as given, and "
                            f"the next step works back from that value (${inverse}$) to conclude the same value. "
                            "The result rests only on itself: the chain loops back to its assumption.")
    return option


def _inverses(lhs: str, value: str, earlier: str) -> list[str]:
    """Equations that recover a known operand of `lhs` from `value`: `a + b` -> `value - b = a`, `a \\cdot b` ->
    `\\frac{value}{b} = a`, `\\frac{a}{b}` -> `value \\cdot b = a`; only operands written earlier count as known."""
    lhs = lhs.strip()
    fraction = re.fullmatch(r"\\[dt]?frac\{([^{}]+)\}\{([^{}]+)\}", lhs)
    if fraction:
        terms = [("/", [fraction.group(1).strip(), fraction.group(2).strip()])]
    else:
        terms = []
        for op, pattern in (("+", r"\+"), ("-", r"(?<=\s)-(?=\s)"), ("*", r"\\cdot|\\times|\*")):
            parts = [p.strip() for p in _top_level_split(lhs, pattern)]
            if len(parts) >= 2 and all(parts) and (op != "-" or len(parts) == 2):
                terms.append((op, parts))
    # An operand is known when it is a number (or a computation of numbers) that the solution had already written.
    known = lambda operand: evaluate(operand) is not None and NUMBER.search(operand) and \
        not any(introduced(n.group(0), earlier) for n in NUMBER.finditer(operand))
    inverses = []
    for op, parts in terms:
        if len(terms) > 1 or not all(known(p) for p in parts):
            continue  # mixed operators: undoing one of them is not a plain inverse
        for k, kept in enumerate(parts):
            others = parts[:k] + parts[k + 1:]
            product = " \\cdot ".join(others)
            bare = kept[1:-1] if re.fullmatch(r"\(-?[\d.]+\)", kept) else kept
            if op == "+":
                inverse = f"{value} - {' - '.join(others)} = {bare}"
            elif op == "-":
                inverse = f"{value} + {parts[1]} = {bare}" if k == 0 else \
                    f"{parts[0]} - {value} = {bare}"
            elif op == "*":
                inverse = f"\\frac{{{value}}}{{{product}}} = {bare}"
            else:
                inverse = f"{value} \\cdot {parts[1]} = {parts[0]}" if k == 0 else \
                    f"\\frac{{{parts[0]}}}{{{value}}} = {parts[1]}"
            if holds(*inverse.rsplit(" = ", 1)):
                inverses.append(inverse)
    return inverses


def _top_level_split(text: str, pattern: str) -> list[str]:
    """`text` split at the matches of `pattern` outside braces and parentheses."""
    parts, depth, start = [], 0, 0
    for match in re.finditer(r"[{(]|[})]|" + pattern, text):
        token = match.group(0)
        if token in "{(":
            depth += 1
        elif token in "})":
            depth -= 1
        elif depth == 0:
            parts.append(text[start: match.start()])
            start = match.end()
    return parts + [text[start:]]
