"""Semantic check of domain_inconsistency candidates, independent of whatever made them.

Criterion: the first error step brings in a rule from a table of rules that hold in one domain and fail in
another, the original step did not use it, and the trajectory is in a domain where the rule fails:
- complex numbers: a number times its conjugate taken as its square, `|z|^2 = z^2`, `\\sqrt{z^2} = z`;
- negative radicands: `\\sqrt{a}\\sqrt{b} = \\sqrt{ab}` with both radicands negative;
- matrices: `AB = BA`, `(AB)^{-1} = A^{-1}B^{-1}`, `\\det(A+B) = \\det A + \\det B`;
- bases other than 10: the base-10 digit-sum test for 3 or 9, carrying at 10;
- integers: a real-valued root or quotient taken as an integer count without rounding.
The offline engine makes no domain_inconsistency candidate today (it needs a model); the check is for candidates
from a model and for any future operator, and its own tests show it telling honest candidates from wrong ones.
"""
from __future__ import annotations

import re

COMPLEX = re.compile(r"\bcomplex\b|i\^2|\\overline|\bconjugate\b|(?<![A-Za-z\\])\d*i(?![A-Za-z])")
MATRIX = re.compile(r"\bmatri(?:x|ces)\b|\\begin\{[pbv]?matrix\}|\\det\b")
OTHER_BASE = re.compile(r"_\{?(?:[2-9]|1[1-6])\}?(?![\d])|\bbase[- ](?:[2-9]|1[1-6]|two|three|four|five|six|seven|"
                        r"eight|nine|twelve|sixteen)\b")
INTEGER = re.compile(r"\binteger|\bhow many\b|\bnumber of\b", re.IGNORECASE)

# (domain the rule fails in, what the misused rule looks like in a step)
RULES: list[tuple[str, str, re.Pattern]] = [
    ("complex", "a number times its conjugate is its square",
     re.compile(r"conjugate[^.]*\bsquared?\b|times its conjugate is[^.]*square|"
                r"\(([^()]*[+-]\s*\d*i)\)\s*\(([^()]*[+-]\s*\d*i)\)\s*=\s*\(\1\)\^2")),
    ("complex", "|z|^2 = z^2", re.compile(r"\|\s*([a-z])\s*\|\^2\s*=\s*\1\^2|\b([a-z])\^2\s*=\s*\|\s*\2\s*\|\^2|"
                                         r"a square is never negative")),
    ("complex", "sqrt(z^2) = z", re.compile(r"\\sqrt\{\s*([a-z])\^2\s*\}\s*=\s*\1(?![\w^])")),
    ("negative_radicand", "sqrt(a) sqrt(b) = sqrt(ab) for negatives",
     re.compile(r"\\sqrt\{-\s*\d+\}\s*(?:\\cdot|\\times)?\s*\\sqrt\{-\s*\d+\}\s*=\s*\\sqrt\{\s*(?:\(-?\d+\)\s*){2}|"
                r"\\sqrt\{-\s*\d+\}\s*(?:\\cdot|\\times)?\s*\\sqrt\{-\s*\d+\}\s*=\s*\\sqrt\{\d+\}")),
    ("matrix", "AB = BA", re.compile(r"\b([A-Z])([A-Z])\s*=\s*\2\1\b|commut")),
    ("matrix", "(AB)^{-1} = A^{-1}B^{-1}",
     re.compile(r"\(([A-Z])([A-Z])\)\^\{-1\}\s*=\s*\1\^\{-1\}\s*\2\^\{-1\}")),
    ("matrix", "det(A+B) = det A + det B",
     re.compile(r"\\det\s*\(([A-Z])\s*\+\s*([A-Z])\)\s*=\s*\\det\s*\(?\1\)?\s*\+\s*\\det\s*\(?\2\)?")),
    ("other_base", "the digit-sum test for 3 or 9", re.compile(r"(?:sum of (?:the |its )?digits|digit sum)[^.]*"
                                                               r"(?:divisible|multiple) (?:by|of) [39]\b")),
    ("other_base", "carrying at ten", re.compile(r"carry(?:ing)? (?:[^.]*\b)?(?:reaches|at|over) 10\b|\bcarry[^.]*"
                                                 r"\bten\b")),
    ("integer", "a non-integer taken as a count", re.compile(r"\b\d+\.\d+ (?:ways|integers|values|solutions)\b")),
]


def domains(question: str, steps: list[str]) -> set[str]:
    """The domains the problem lives in, read from the question and the original solution."""
    text = question + "\n" + "\n".join(steps)
    found = set()
    if COMPLEX.search(text):
        found.add("complex")
    if re.search(r"\\sqrt\{-", text) or "complex" in found:
        found.add("negative_radicand")
    if MATRIX.search(text):
        found.add("matrix")
    if OTHER_BASE.search(question):
        found.add("other_base")
    if INTEGER.search(question):
        found.add("integer")
    return found


def misused_rules(step: str) -> list[tuple[str, str]]:
    return [(domain, name) for domain, name, pattern in RULES if pattern.search(step)]


def check(original, candidate: dict) -> list[str]:
    errors = sorted(candidate["error_steps"])
    if not errors:
        return ["no error step"]
    first = errors[0]
    if first not in candidate["modified_steps"]:
        return [f"the first error step {first} is an unchanged step: no rule was carried anywhere"]
    if candidate["modified_question"] != original.question:
        return ["the question changed: a domain error lies in the solution, not the question"]
    step = candidate["modified_process"][first - 1]
    rules = misused_rules(step)
    if not rules:
        return [f"step {first} uses no rule of the table of cross-domain misuses"]
    before = set(misused_rules(" ".join(original.steps)))
    new_rules = [rule for rule in rules if rule not in before]
    if not new_rules:
        return [f"step {first}'s rule ({rules[0][1]}) is already in the original solution"]
    where = domains(original.question, list(original.steps))
    if not any(domain in where for domain, _ in new_rules):
        names = ", ".join(f"{name} (fails for {domain})" for domain, name in new_rules)
        return [f"step {first} misuses {names}, but the problem is not in that domain ({sorted(where) or 'reals'})"]
    return []
