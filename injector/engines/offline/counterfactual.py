"""Offline counterfactual operators: false *knowledge* (a wrong formula, identity, constant or definition from the
table below), applied where a step uses that knowledge, then propagated through the later steps to the answer.

An arithmetic slip is not counterfactual (that is ProJudge's numerical_calculation, `numerical_calculation.py`)."""
from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from math import isqrt

from injector.model.trajectory import Trajectory
from injector.engines.offline.latex_values import DECORATION, LITERAL, chains, evaluate, math_spans, tokens
from injector.engines.offline.propagate import carried_on, final_answer_changed, propagate
from injector.engines.offline.text import Option, Perturbation, split_answer


@dataclass(frozen=True)
class Knowledge:
    """One row of the table: a piece of true knowledge and the false form the operator writes instead."""

    id: str
    true: str
    false: str
    kind: str
    """"constant": a number in the step is replaced by `wrong` where the step's words say what it is;
    "formula": an expression of the step is rewritten into the false form (see FORMULAS)."""
    right: str = ""
    wrong: str = ""
    context: tuple[str, ...] = ()
    """Regexes that must all match the step's words (what the constant is about)."""


TABLE: tuple[Knowledge, ...] = (
    # No "a triangle's angles add up to 360" row: the angle it leaves is always over 180 degrees (implausible).
    Knowledge("minutes_per_hour", "an hour has 60 minutes", "an hour has 100 minutes", "constant", "60", "100",
              (r"\bminutes?\b", r"\bhours?\b")),
    Knowledge("seconds_per_minute", "a minute has 60 seconds", "a minute has 100 seconds", "constant", "60", "100",
              (r"\bseconds?\b", r"\bminutes?\b")),
    Knowledge("seconds_per_hour", "an hour has 3600 seconds", "an hour has 360 seconds", "constant", "3600", "360",
              (r"\bseconds?\b", r"\bhours?\b")),
    Knowledge("meters_per_kilometer", "a kilometer is 1000 meters", "a kilometer is 100 meters", "constant",
              "1000", "100", (r"kilomet", r"\bmet(?:er|re)s?\b")),
    Knowledge("inches_per_foot", "a foot is 12 inches", "a foot is 10 inches", "constant", "12", "10",
              (r"\binch", r"\bf(?:oo|ee)t\b")),
    Knowledge("hours_per_day", "a day has 24 hours", "a day has 12 hours", "constant", "24", "12",
              (r"\bhours?\b", r"\bdays?\b")),
    Knowledge("binomial_as_permutation", r"\binom{n}{k} = \frac{n!}{k!(n-k)!}",
              r"\binom{n}{k} = \frac{n!}{(n-k)!} = n(n-1)\cdots(n-k+1), without dividing by k!", "formula"),
    Knowledge("binomial_without_complement", r"\binom{n}{k} = \frac{n!}{k!(n-k)!}",
              r"\binom{n}{k} = \frac{n!}{k!}, without dividing by (n-k)!", "formula"),
    Knowledge("root_of_sum", r"\sqrt{a^2 + b^2} is not a + b",
              r"\sqrt{a^2 \pm b^2} = a \pm b (the root of a sum taken term by term)", "formula"),
    Knowledge("power_as_product", r"a^n is a multiplied by itself n times", r"a^n = a \cdot n", "formula"),
    Knowledge("triangle_area_without_half", r"the area of a triangle is \frac{1}{2} \cdot base \cdot height",
              r"the area of a triangle is base \cdot height", "formula"),
    Knowledge("quadrilateral_angle_sum", "the angles of a quadrilateral add up to 360 degrees",
              "the angles of a quadrilateral add up to 180 degrees", "constant", "360", "180",
              (r"quadrilateral|rectangle|trapezoid|parallelogram|rhombus", r"angle")),
    # No "factorial as a sum" row: "6! = 21" reads as implausible, not as false knowledge (plausible.implausible).
    Knowledge("polygon_angle_sum", r"the interior angles of an n-gon add up to (n-2) \cdot 180 degrees",
              r"the interior angles of an n-gon add up to (n-1) \cdot 180 degrees", "formula"),
    Knowledge("polygon_diagonals", r"an n-gon has \frac{n(n-3)}{2} diagonals", r"an n-gon has \frac{n(n-1)}{2} diagonals",
              "formula"),
    Knowledge("gauss_sum", r"1 + 2 + \cdots + n = \frac{n(n+1)}{2}", r"1 + 2 + \cdots + n = \frac{n(n-1)}{2}",
              "formula"),
)


def _false_form(row: Knowledge, expression: str) -> str | None:
    """The false form of `expression` (the left end of an equation chain) under `row`, or None."""
    expression = expression.strip()
    if row.id == "binomial_as_permutation":
        match = re.fullmatch(r"\\binom\{(\d+)\}\{(\d+)\}", expression)
        if not match:
            return None
        n, k = int(match.group(1)), int(match.group(2))
        if not 2 <= k < n or k > 4:
            return None
        return " \\cdot ".join(str(n - j) for j in range(k))
    if row.id == "binomial_without_complement":
        match = re.fullmatch(r"\\binom\{(\d+)\}\{(\d+)\}", expression)
        if not match:
            return None
        n, k = int(match.group(1)), int(match.group(2))
        if not 2 <= k <= n - 2 or n > 10:
            return None  # k = n - 1 or n would make n!/k! true or small; big n makes an absurd number
        return f"\\frac{{{n}!}}{{{k}!}}"
    if row.id == "root_of_sum":
        match = re.fullmatch(r"\\sqrt\{\s*(\d+)\^2\s*([-+])\s*(\d+)\^2\s*\}", expression)
        if match:
            return f"{match.group(1)} {match.group(2)} {match.group(3)}"
        match = re.fullmatch(r"\\sqrt\{\s*(\d+)\s*([-+])\s*(\d+)\s*\}", expression)
        if match:
            a, b = int(match.group(1)), int(match.group(3))
            if a > 1 and b > 1 and isqrt(a) ** 2 == a and isqrt(b) ** 2 == b:
                return f"{isqrt(a)} {match.group(2)} {isqrt(b)}"
        return None
    if row.id == "power_as_product":
        match = re.fullmatch(r"(\d+)\^\{?(\d)\}?", expression)
        if not match or int(match.group(1)) < 2 or int(match.group(2)) < 3:
            return None  # 2^2 = 2 \cdot 2 is true
        return f"{match.group(1)} \\cdot {match.group(2)}"
    if row.id == "triangle_area_without_half":
        match = re.fullmatch(r"\\frac\{1\}\{2\}\s*(?:\\cdot|\\times)?\s*(.+)", expression)
        return match.group(1) if match else None
    if row.id == "polygon_angle_sum":
        match = re.fullmatch(r"180\s*(?:\\cdot|\\times)?\s*\(\s*(\d+)\s*-\s*2\s*\)|\(\s*(\d+)\s*-\s*2\s*\)\s*"
                             r"(?:\\cdot|\\times)?\s*180(?:\^\\circ|\^\{\\circ\})?", expression)
        if not match:
            return None
        sides = match.group(1) or match.group(2)
        return f"({sides} - 1) \\cdot 180"
    if row.id == "polygon_diagonals":
        match = re.fullmatch(r"\\frac\{\s*(\d+)\s*(?:\\cdot|\\times)?\s*\(\s*(\d+)\s*-\s*3\s*\)\s*\}\{2\}", expression)
        if not match or match.group(1) != match.group(2):
            return None
        return f"\\frac{{{match.group(1)}({match.group(1)} - 1)}}{{2}}"
    if row.id == "gauss_sum":
        match = re.fullmatch(r"\\frac\{\s*(\d+)\s*(?:\\cdot|\\times)?\s*\(?\s*(\d+)\s*\)?\s*\}\{2\}", expression)
        if match and int(match.group(2)) == int(match.group(1)) + 1:
            return f"\\frac{{{match.group(1)} \\cdot {int(match.group(1)) - 1}}}{{2}}"
        return None
    return None


def _formula_sites(row: Knowledge, body: str) -> list[tuple[int, int, str]]:
    """(start, end, new text) for each place in `body` where `row`'s formula is used in an equation chain: the
    chain's middle is replaced by the false form, its final literal kept (propagation recomputes it)."""
    if row.id == "triangle_area_without_half" and not (re.search(r"triangle", body, re.I)
                                                       and re.search(r"\barea\b", body, re.I)):
        return []
    if row.id == "gauss_sum" and not re.search(r"\bsum\b|\bsumm", body, re.I):
        return []
    if row.id == "polygon_angle_sum" and not re.search(r"angle", body, re.I):
        return []
    if row.id == "polygon_diagonals" and not re.search(r"diagonal", body, re.I):
        return []
    sites = []
    for chain in chains(body, math_spans(body)):
        if not chain.relations or any(r != "=" for r in chain.relations):
            continue
        for k in range(len(chain.exprs) - 1):
            a, b = chain.exprs[k]
            false = _false_form(row, body[a:b])
            if false is None:
                continue
            last_a, last_b = chain.exprs[-1]
            if k + 1 == len(chain.exprs) - 1 and not LITERAL.fullmatch(DECORATION.sub(" ", body[last_a:last_b])):
                continue
            if row.id == "triangle_area_without_half":
                sites.append((a, b, " " + false + " "))  # the area expression itself loses its half
            else:  # "X = <false form> = <result>": everything between X and the final result is replaced
                # In the step's own spacing: "\\binom{8}{2}=28" -> "\\binom{8}{2}=8 \\cdot 7=28".
                spaced = re.search(r"\s=|=\s", body[max(b - 1, 0): last_a + 1]) is not None
                sites.append((b, last_a, f"= {false} =" if spaced else f"={false}="))
            break
    return sites


def _constant_sites(row: Knowledge, body: str) -> list[str]:
    """The step with the constant replaced everywhere it stands (not in exponents), or [] when the step's words do
    not say the constant is this knowledge."""
    words = re.sub(r"\$[^$]*\$", " ", body)
    if not all(re.search(pattern, words, re.IGNORECASE) for pattern in row.context):
        return []
    found = [t for t in tokens(body) if t.text == row.right and not t.raised]
    computed = [chain.exprs[-1] for chain in chains(body, math_spans(body))
                if chain.relations and chain.relations[-1] == "="
                and evaluate(body[chain.exprs[-2][0]:chain.exprs[-2][1]], {}) is not None]
    if not found or any(a <= t.start < b for t in found for a, b in computed):
        return []  # "60 \cdot 60 = 3600": a computed result, changing it would be an arithmetic slip
    text = body
    for token in reversed(found):
        text = text[: token.start] + row.wrong + text[token.end:]
    return [text]


def _unexplained_results(body: str, new_body: str, earlier: str, constant: str = "") -> bool:
    """Does the step state, after the change, a number of its own that no equation of it shows how to get
    ("$7! = 5040$, the first term is $315$")? It may follow from the changed value, and cannot be recomputed: the
    change would not be carried consistently."""
    changed_at = len(os.path.commonprefix([body, new_body]))
    inside = [span for chain in chains(body, math_spans(body)) if chain.relations for span in chain.exprs]
    in_equations = {t.value for t in tokens(body) if any(a <= t.start < b for a, b in inside)}
    written = {t.value for t in tokens(earlier + " " + constant)}  # the constant itself is the change
    return any(t.start >= changed_at and not t.raised and t.value not in written | in_equations
               for t in tokens(body))


def counterfactual_options(trajectory: Trajectory) -> list[Option]:
    options: list[Option] = []
    steps = list(trajectory.steps)
    believed: set[str] = set()  # constants already used (truly) by an earlier step
    for index, step in enumerate(steps):
        body, tail = split_answer(step)
        for row in TABLE:
            if row.kind == "constant":
                if row.id in believed:
                    continue  # a solver who knew the constant a step ago does not forget it now
                new_bodies = [(text, True) for text in _constant_sites(row, body)]
                if new_bodies:
                    believed.add(row.id)
            else:
                new_bodies = [(body[:a] + new + body[b:], False) for a, b, new in _formula_sites(row, body)]
            for new_body, carry in new_bodies:
                if _unexplained_results(body, new_body, trajectory.question + " " + " ".join(steps[:index]),
                                        row.right):
                    continue

                def option(rng: random.Random, index=index, row=row, new_text=new_body + tail,
                           carry=carry) -> Perturbation | None:
                    edits = propagate(steps, index, new_text, question=trajectory.question, recompute=True,
                                      carry=carry)
                    if edits is None or not final_answer_changed(steps, edits):
                        return None
                    return Perturbation(f"false_knowledge:{row.id}", edits,
                                        f"Step {index + 1} uses false knowledge: {row.false}, whereas "
                                        f"{row.true}.{carried_on(edits)}")
                options.append(option)
    return options
