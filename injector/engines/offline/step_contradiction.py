"""Offline step_contradiction operators: a later step uses a different value for a quantity that an earlier step
established (derived there as the result of an equation, or set there as `x = v`), and the steps after it are
recomputed from the conflicting value, up to the answer; or the conflicting step is a dead end (`dead_end`: nothing
later uses what it derives), and it alone is false while the answer stays. The earlier step stays as it was."""
from __future__ import annotations

import random
from fractions import Fraction

from injector.model.trajectory import Trajectory
from injector.engines.offline.equations import computations, holds
from injector.engines.offline.numerical_calculation import slip_decimal, slipped
from injector.engines.offline.latex_values import DECORATION, LITERAL, Token, chains, math_spans, render, tokens, values
from injector.engines.offline.propagate import carried_on, final_answer_changed, propagate
from injector.engines.offline.positions import Placed
from injector.engines.offline.text import Option, Perturbation, split_answer


def established(body: str) -> dict[Fraction, str]:
    """Values a step establishes: the literal ending an `=` chain (a derived result, or `x = 5`), with the
    expression it was derived from."""
    found = {}
    for chain in chains(body, math_spans(body)):
        if not chain.relations or chain.relations[-1] != "=":
            continue
        a, b = chain.exprs[-1]
        match = LITERAL.fullmatch(DECORATION.sub(" ", body[a:b]))
        if match is None:
            continue
        literal: list[Token | None] = [*tokens(body[a:b])] or [None]
        [token] = literal
        if token is not None:
            found[token.value] = body[chain.exprs[-2][0]:chain.exprs[-2][1]].strip()
    return found


def dead_end(steps: list[str], j: int, edits: list[dict], value: Fraction) -> bool:
    """Is the conflicting step `j` (0-based) a dead end: the only step changed, not the last, followed by an
    `# Answer` line or by a step that derives a result of its own (so it does not state the answer), and none of the
    results it derived (the values its rewrite removed, other than the established one) used by a later step? Then
    its error reaches nothing, the final answer stays, and only step j is false: PRMBench's contradictions are most
    often such a single step, seldom the last (its train-phase-1 data label the last step in 9 % of them)."""
    if len(edits) != 1 or j >= len(steps) - 1 or split_answer(steps[j])[1]:
        return False
    if not split_answer(steps[-1])[1] and not any(established(split_answer(step)[0]) for step in steps[j + 1:]):
        return False  # no `# Answer` line, and nothing derived after it: the step may be the one with the answer
    new_body = split_answer(edits[0]["text"])[0]
    if not all(holds(c.lhs, c.value) for c in computations(new_body, j)) or \
            set(established(new_body)) & set(established(split_answer(steps[j])[0])):
        # Every result of the step follows from the conflicting value; none stays as it was (as 140 did in
        # "$8!/34 = \\frac{20160}{17}$ and $\\frac{20160}{17}/9 = 140$").
        return False
    lost = values(split_answer(steps[j])[0]) - values(new_body) - {value, -value}
    return bool(lost) and not any(lost & values(step) for step in steps[j + 1:])


def step_contradiction_options(trajectory: Trajectory) -> list[Option]:
    """For each value established in step i and first stated there, each later step j that uses it inside an
    equation: step j uses another value instead."""
    steps = list(trajectory.steps)
    options: list[Option] = []
    for i, step in enumerate(steps):
        body = split_answer(step)[0]
        earlier = values(trajectory.question) | frozenset().union(*(values(s) for s in steps[:i]))
        for value, source in established(body).items():
            if value in earlier or -value in earlier or value == 0:
                continue  # not established here: a given, or a value an earlier step already had
            for j in range(i + 1, len(steps)):
                later_body, tail = split_answer(steps[j])
                uses = [t for t in tokens(later_body) if t.value == value and not t.raised
                        and any(a <= t.start < b for chain in chains(later_body, math_spans(later_body))
                                for a, b in chain.exprs[:-1] if chain.relations)]
                if not uses:
                    continue

                def option(rng: random.Random, i=i, j=j, value=value, source=source, later_body=later_body,
                           tail=tail) -> Perturbation | None:
                    used = [t for t in tokens(later_body) if t.value == value and not t.raised]
                    like = used[0].text
                    if "." in like and "frac" not in like:  # 37.5 -> 37.4 or 38.5, in its own decimals
                        wrong = Fraction(slip_decimal(like.lstrip("-"), rng)) * (-1 if value < 0 else 1)
                    else:
                        wrong = slipped(value, rng)
                    text = later_body
                    for token in reversed(used):
                        text = text[: token.start] + render(wrong, token.text, in_math=True) + text[token.end:]
                    edits = propagate(steps, j, text + tail, question=trajectory.question, recompute=True,
                                      carry=False)
                    if edits is None or not (final_answer_changed(steps, edits) or
                                             dead_end(steps, j, edits, value)):
                        return None
                    if value in values(split_answer(edits[0]["text"])[0]):
                        return None  # the conflicting step would show the established value too: no clear conflict
                    old, new = render(value, like, True), render(wrong, like, True)
                    return Perturbation("conflicting_value", edits,
                                        f"Step {i + 1} establishes ${source} = {old}$, but step {j + 1} uses "
                                        f"${new}$ for the same quantity.{carried_on(edits)}")
                # Every later use: where one cannot be carried through, another may.
                options.append(Placed(option, j + 1, len(steps)))
    return options
