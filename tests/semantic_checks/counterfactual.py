"""counterfactual: the first error step states one of the table's false forms (re-read from the step's own text
here), every later error step's equations hold, and the final answer changed where the error reached it."""
from __future__ import annotations

import re
from math import comb, factorial, isqrt

from injector import Trajectory
from injector.engines.offline.counterfactual import TABLE  # the table as data: ids, constants, context words

from ._arithmetic import body, propagation_problems, value

NUMBERS = re.compile(r"(?<![\w.^_{])\d+(?:\.\d+)?(?![\w.]\d|\d)")


def _numbers(text: str) -> list[str]:
    return NUMBERS.findall(re.sub(r"\\frac\{\d+\}\{\d+\}", " ", text))


def false_forms(old: str, new: str) -> list[str]:
    """The ids of the table rows whose false form the step `new` (made from `old`) states."""
    found = []
    words = re.sub(r"\$[^$]*\$", " ", new)
    for row in TABLE:
        if row.kind != "constant":
            continue
        if (all(re.search(p, words, re.I) for p in row.context) and row.wrong in _numbers(new)
                and row.right not in _numbers(new) and row.right in _numbers(old)):
            found.append(row.id)
    text = body(new)
    for n, k, expansion in re.findall(r"\\binom\{(\d+)\}\{(\d+)\}\s*=\s*([^=$]+?)\s*=", text):
        v = value(expansion)
        if v is not None and v == factorial(int(n)) // factorial(int(n) - int(k)) != comb(int(n), int(k)):
            found.append("binomial_as_permutation")
    for n, k, m, j in re.findall(r"\\binom\{(\d+)\}\{(\d+)\}\s*=\s*\\d?frac\{(\d+)!\}\{(\d+)!\}\s*=", text):
        if (n, k) == (m, j) and factorial(int(n)) // factorial(int(k)) != comb(int(n), int(k)):
            found.append("binomial_without_complement")
    for a, sign, b, c, sign2, d in re.findall(
            r"\\sqrt\{\s*(\d+)\^2\s*([-+])\s*(\d+)\^2\s*\}\s*=\s*(\d+)\s*([-+])\s*(\d+)", text):
        if (a, sign, b) == (c, sign2, d):
            found.append("root_of_sum")
    for a, sign, b, c, sign2, d in re.findall(
            r"\\sqrt\{\s*(\d+)\s*([-+])\s*(\d+)\s*\}\s*=\s*(\d+)\s*([-+])\s*(\d+)", text):
        if sign == sign2 and isqrt(int(a)) == int(c) and int(c) ** 2 == int(a) and int(d) ** 2 == int(b):
            found.append("root_of_sum")
    for a, n, c, d in re.findall(r"(\d+)\^\{?(\d)\}?\s*=\s*(\d+)\s*\\cdot\s*(\d+)", text):
        if (a, n) == (c, d) and int(a) ** int(n) != int(a) * int(n):
            found.append("power_as_product")
    if (re.search(r"triangle", new, re.I) and re.search(r"\barea\b", new, re.I)
            and "\\frac{1}{2}" in old and old.count("\\frac{1}{2}") > new.count("\\frac{1}{2}")):
        found.append("triangle_area_without_half")
    for n, terms in re.findall(r"(\d+)!\s*=\s*((?:\d+\s*\+\s*)+1)\b", text):
        if [int(t) for t in re.findall(r"\d+", terms)] == list(range(int(n), 0, -1)):
            found.append("factorial_as_sum")
    if re.search(r"angle", new, re.I):
        for n in re.findall(r"\(\s*(\d+)\s*-\s*1\s*\)\s*\\cdot\s*180", text):
            if re.search(rf"\(\s*{n}\s*-\s*2\s*\)|180\s*(?:\\cdot)?\s*\(\s*{n}\s*-\s*2\s*\)", old):
                found.append("polygon_angle_sum")
    if re.search(r"diagonal", new, re.I):
        for n, m in re.findall(r"\\frac\{\s*(\d+)\s*\(\s*(\d+)\s*-\s*1\s*\)\s*\}\{2\}", text):
            if n == m:
                found.append("polygon_diagonals")
    for n, m in re.findall(r"\\frac\{\s*(\d+)\s*\\cdot\s*(\d+)\s*\}\{2\}", text):
        if int(m) == int(n) - 1 and re.search(r"\bsum", new, re.I):
            found.append("gauss_sum")
    return found


def check(original: Trajectory, candidate: dict) -> list[str]:
    if not candidate["error_steps"]:
        return ["no error step"]
    first = min(candidate["error_steps"])
    old, new = original.steps[first - 1], candidate["modified_process"][first - 1]
    problems = []
    if not false_forms(old, new):
        problems.append(f"step {first} states none of the table's false forms: {new!r}")
    return problems + propagation_problems(list(original.steps), candidate, first)
