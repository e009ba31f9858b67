"""Offline numerical_calculation operators (ProJudge's arithmetic slip): a computed result is miscalculated, and
every later step that uses it is recomputed from the wrong value, up to the final answer."""
from __future__ import annotations

import random
import re
from fractions import Fraction

from injector.model.trajectory import Trajectory
from injector.engines.offline.latex_values import DECORATION, LITERAL, chains, evaluate, math_spans, render
from injector.engines.offline.propagate import carried_on, final_answer_changed, propagate
from injector.engines.offline.text import Option, Perturbation, split_answer


def slipped(value: Fraction, rng: random.Random) -> Fraction:
    """A plausible wrong result: off by a little, a digit dropped or doubled, two digits swapped."""
    sign = -1 if value < 0 else 1
    magnitude = abs(value)
    if magnitude.denominator != 1:
        numerator = magnitude.numerator + rng.choice((1, -1, 2)) if magnitude.numerator > 2 else magnitude.numerator + 1
        return sign * Fraction(numerator, magnitude.denominator)
    digits = str(magnitude.numerator)
    choices = [magnitude + 1, magnitude + 2, magnitude - 1]
    if magnitude >= 20:
        choices += [magnitude + 10, magnitude - 10]
    if len(digits) >= 2 and digits[-1] != digits[-2] and digits[-1] != "0":
        choices.append(Fraction(int(digits[:-2] + digits[-1] + digits[-2])))  # 54 -> 45
    choices = [c for c in choices if c > 0 and c != magnitude]
    return sign * rng.choice(choices)


def slip_decimal(text: str, rng: random.Random) -> str:
    """A decimal result with one digit off ("14.60" -> "14.50", "15.60")."""
    digits = [k for k, ch in enumerate(text) if ch.isdigit()]
    position = rng.choice(digits)
    old = int(text[position])
    new = rng.choice([d for d in (old + 1, old - 1) if 0 <= d <= 9])
    if position == digits[0] and new == 0 and len([d for d in digits if text.index(".") > d]) > 1:
        new = old + 1  # no leading zero
    return text[:position] + str(new) + text[position + 1:]


def computed_results(body: str) -> list[tuple[int, int, str]]:
    """(start, end, expression) of each literal that ends a purely numeric `=` chain which holds."""
    found = []
    for chain in chains(body, math_spans(body)):
        if not chain.relations or any(r != "=" for r in chain.relations):
            continue
        exprs = [body[a:b] for a, b in chain.exprs]
        if not LITERAL.fullmatch(DECORATION.sub(" ", exprs[-1])):
            continue
        vals = [evaluate(e, {}) for e in exprs]
        if any(v is None for v in vals) or any(v != vals[-1] for v in vals):
            continue
        if LITERAL.fullmatch(DECORATION.sub(" ", exprs[-2])):
            continue  # "6 = 6" restates, it computes nothing
        a, b = chain.exprs[-1]
        found.append((a, b, exprs[-2].strip()))
    return found


def numerical_calculation_options(trajectory: Trajectory) -> list[Option]:
    options: list[Option] = []
    steps = list(trajectory.steps)
    for index, step in enumerate(steps):
        body, tail = split_answer(step)
        for start, end, expression in computed_results(body):
            def option(rng: random.Random, index=index, body=body, tail=tail, start=start, end=end,
                       expression=expression) -> Perturbation | None:
                text = body[start:end]
                core = LITERAL.fullmatch(DECORATION.sub(" ", text))
                lead = len(text) - len(text.lstrip())
                old_text = text.strip()
                fraction = re.fullmatch(r"(-?\\[dt]?frac\{)(\d+)(\}\{\d+\})", old_text)
                if "." in old_text and "frac" not in old_text:
                    new_text = slip_decimal(old_text, rng)
                elif fraction:  # \frac{30}{56} -> \frac{31}{56}: the slip in the numerator, in the step's own form
                    numerator = int(fraction.group(2)) + rng.choice((1, -1, 2))
                    new_text = f"{fraction.group(1)}{max(numerator, 1)}{fraction.group(3)}"
                else:
                    old_value = Fraction(evaluate(old_text, {}).p, evaluate(old_text, {}).q)
                    new_text = render(slipped(old_value, rng), old_text, in_math=True)
                if core is None or new_text == old_text:
                    return None
                new_step = body[:start + lead] + new_text + body[start + lead + len(old_text):] + tail
                edits = propagate(steps, index, new_step, question=trajectory.question)
                if edits is None or not final_answer_changed(steps, edits):
                    return None
                return Perturbation("arithmetic_slip", edits,
                                    f"Step {index + 1} miscalculates ${expression}$ as ${new_text}$; it is "
                                    f"${old_text}$.{carried_on(edits)}")
            options.append(option)
    return options
