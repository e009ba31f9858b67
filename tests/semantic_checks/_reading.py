"""Reading steps for the semantic checks, written apart from the engine's own parsing (injector/engines/offline)
so that a check can disagree with the operator it checks."""
from __future__ import annotations

import re

import sympy
from latex2sympy2_extended import latex2sympy

# `$...$` math; an escaped `\$` is a dollar sign inside it, not a delimiter.
DOLLARS = re.compile(r"(?<!\\)\$((?:\\\$|[^$])+?)(?<!\\)\$", re.DOTALL)
# A minus is a sign only where no operand ends right before it ("11-8" holds 8, "=-8" holds -8).
A_NUMBER = re.compile(r"(?:(?<![\w)}.])-)?(?:\d+(?:\.\d+)?|\\d?frac\{\d+\}\{\d+\})")
ANSWER = re.compile(r"#+\s*answer", re.IGNORECASE)


def body(step: str) -> str:
    """The step without its `# Answer` part."""
    mark = ANSWER.search(step)
    return step[: mark.start()] if mark else step


def answer(steps: list[str]) -> str | None:
    """The text after the last `# Answer` heading, stripped."""
    for step in reversed(steps):
        mark = ANSWER.search(step)
        if mark:
            return step[mark.end():].replace("\\n", "\n").strip()
    return None


def value_of(latex: str):
    """The number a LaTeX expression (without unknowns) stands for, or None."""
    cleaned = latex.replace("\\left", "").replace("\\right", "").replace("\\$", "").replace("*", "\\cdot ")
    if re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", "", cleaned)):
        return None
    try:
        value = sympy.nsimplify(latex2sympy(cleaned).doit(), rational=True)
    except Exception:
        return None
    return value if value.is_number and value.is_finite else None


# Plain-text arithmetic, as PRMBench's echoed steps write it: "60 * 7 = 420", "420/60 = 7".
# The right side is an expression too: "23478 = 2 * 3 * 3913" is not "23478 = 2".
PLAIN_EQUATION = re.compile(r"[\d(][\d\s.+\-*/()]*=\s*-?\d+(?:\.\d+)?(?:\s*[+\-*/]\s*\(?\d+(?:\.\d+)?\)?)*")


def math_parts(text: str) -> list[str]:
    """The math of a step: each `$...$`, and each plain-text equation outside them."""
    return [m.group(1) for m in DOLLARS.finditer(text)] + \
        [m.group(0) for m in PLAIN_EQUATION.finditer(DOLLARS.sub(" ", text))]


def numeric_equalities(text: str) -> list[tuple[str, str]]:
    """Each `A = B` between two expressions without unknowns, in the step's math (chains give each neighbour
    pair)."""
    pairs = []
    for math in math_parts(text):
        sides = math.split("=")
        for left, right in zip(sides, sides[1:]):
            if value_of(left) is not None and value_of(right) is not None:
                pairs.append((left.strip(), right.strip()))
    return pairs


def equal(left: str, right: str) -> bool:
    """Do two numeric expressions agree, to the decimals written on either side?"""
    a, b = value_of(left), value_of(right)
    if a is None or b is None:
        return False
    decimals = max([len(d) for d in re.findall(r"\.(\d+)", left + " " + right)] or [0])
    return abs(float(a - b)) <= (0.5 * 10 ** -decimals if decimals else 1e-9)


def numbers(text: str) -> set[str]:
    """The numbers written in a text, normalised (`\\dfrac{20}{3}` and `\\frac{20}{3}` are one)."""
    return {re.sub(r"\\d?frac", r"\\frac", n) for n in A_NUMBER.findall(text.replace(" ", ""))}
