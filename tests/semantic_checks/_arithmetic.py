"""Shared by the checks of the propagated categories: their own reading of a step's arithmetic (not the engine's).

An equation is a `=` chain inside `$...$` (or arithmetic in prose, `60 * 7 = 420`) whose sides are all numbers
once parsed by math-verify's LaTeX parser; it holds when every side has the same value."""
from __future__ import annotations

import re
from functools import lru_cache

DOLLARS = re.compile(r"(?<!\\)\$((?:\\\$|[^$])+?)(?<!\\)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)


def math_segments(text: str) -> list[str]:
    """The contents of $...$, \\(...\\) and \\[...\\] segments."""
    return [next(g for g in m.groups() if g is not None) for m in DOLLARS.finditer(text)]
PROSE = re.compile(r"(?<![\w.^_{])\(?-?\d[\d.\s()+\-*/×]*=[\d.\s()+\-*/×=]*\d\)?")
OTHER_RELATIONS = re.compile(r"\\(?:approx|equiv|pmod|neq|le|ge|leq|geq|cong|sim)\b|[<>]")
UNITS = re.compile(r"\\\$|\^\s*\{?\\circ\}?|\\%|\\text\{[^{}]*\}|\\[,;:! ]|\\left|\\right|\\displaystyle")
ANSWER = re.compile(r"#+ *(?:Final )?Answer\b", re.IGNORECASE)


def body(step: str) -> str:
    mark = ANSWER.search(step)
    return step[: mark.start()] if mark else step


def answer(step: str) -> str:
    mark = ANSWER.search(step)
    return step[mark.end():].strip() if mark else ""


def pieces(step: str) -> list[str]:
    text = body(step)
    found = math_segments(text)
    found += PROSE.findall(DOLLARS.sub(" ", text))
    return found


def split_top(text: str, separator: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "{([" and 1 or 0
        depth -= ch in "})]" and 1 or 0
        if ch == separator and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return [*parts, current]


@lru_cache(maxsize=4096)
def value(latex: str):
    """The exact value of a LaTeX expression without unknowns, else None."""
    import sympy
    from latex2sympy2_extended import latex2sympy

    source = UNITS.sub(" ", latex).replace("\\dfrac", "\\frac").replace("×", "\\times ").strip()
    source = re.sub(r"(?<![\w.])(\d+)\.(\d+)", lambda m: f"({m.group(1)}{m.group(2)}/1{'0' * len(m.group(2))})", source)
    if not source or "\\" in source and re.search(r"\\(?:ldots|cdots|dots|in|infty|sum|prod)\b", source):
        return None
    try:
        expr = latex2sympy(source)
        if not isinstance(expr, sympy.Expr) or expr.free_symbols:
            return None
        result = sympy.nsimplify(expr.doit())
        return result if result.is_number and result.is_finite else None
    except Exception:  # anything the parser cannot read is simply not an equation we check
        return None


def equations(step: str) -> list[tuple[str, bool]]:
    """(text, holds) for every numeric `=` chain of the step."""
    import sympy

    found = []
    for piece in pieces(step):
        if OTHER_RELATIONS.search(piece):
            continue
        for clause in split_top(piece, ","):
            sides = split_top(clause, "=")
            if len(sides) < 2:
                continue
            values = [value(side) for side in sides]
            numeric = [v for v in values if v is not None]
            if len(numeric) < 2:
                continue
            holds = all(abs(sympy.N(v - numeric[0], 50)) <= max(abs(sympy.N(v, 20)), 1) * sympy.Float("1e-40")
                        for v in numeric)  # numerically: simplify can take minutes on big powers
            found.append((clause.strip(), holds))
    return found


def false_equations(step: str) -> list[str]:
    return [text for text, holds in equations(step) if not holds]


def propagation_problems(original: list[str], candidate: dict, first_error: int) -> list[str]:
    """What is wrong with the steps after the injected one: a recomputed step with an equation that does not
    hold (and held before), a changed step not marked as an error, an answer that did not change where the error
    reached the last step."""
    problems = []
    process = candidate["modified_process"]
    errors = set(candidate["error_steps"])
    for k in candidate["modified_steps"]:
        if k not in errors:
            problems.append(f"step {k} was changed but is not an error step")
    for k in sorted(errors):
        if k == first_error:
            continue
        new_false = len(false_equations(process[k - 1]))
        old_false = len(false_equations(original[k - 1])) if len(original) == len(process) else 0
        if new_false > old_false:
            problems.append(f"recomputed step {k} states a false equation: {false_equations(process[k - 1])}")
    if ANSWER.search(original[-1]):
        if len(process) in errors and answer(process[-1]) == answer(original[-1]):
            problems.append("the error reaches the last step but the final answer did not change")
        if len(process) not in errors:
            problems.append("the error does not reach the final answer")
    else:  # no `# Answer` line: the solution ends at its last step that states a number
        last = max((k for k, step in enumerate(original, 1) if re.search(r"\d", step)), default=None)
        if last is not None and last not in errors:
            problems.append(f"the error does not reach step {last}, the last one with a result")
    return problems
