"""Offline step_contradiction operators: a later step uses a different value for a quantity that an earlier step
established (derived there as the result of an equation, or set there as `x = v`). Two kinds:
- local (`local`, tried first): the conflicting step alone is rewritten, its own results recomputed from the
  conflicting value; the later steps keep the true values, so it is the only false step and the answer stays.
  PRMBench's contradictions are most often such a single step (its train-phase-1 GPT-4o data label the last
  step in 8 % of them), and the reference allows it: for step_contradiction the conflicting step is the error,
  and later steps that keep the established value are true about the problem;
- carried (`carried`, where no local one applies, now and then: `CARRIED`): the steps after it are recomputed from
  the conflicting value, up to the answer.
The earlier step stays as it was."""
from __future__ import annotations

import random
from fractions import Fraction

from injector.model.trajectory import Trajectory
from injector.engines.offline.equations import computations, holds
from injector.engines.offline.numerical_calculation import slip_decimal, slipped
from injector.engines.offline.latex_values import DECORATION, LITERAL, Token, chains, equal, evaluate, math_spans, \
    render, tokens, values
from injector.engines.offline.propagate import carried_on, final_answer_changed, propagate
from injector.engines.offline.positions import Placed, thinned
from injector.engines.offline.text import Option, Perturbation, split_answer

# How often an option falls back to the carried kind where the local one does not apply (the conflicting step is
# the last, states the answer, or a later step writes what it derives). Tuned on the dev part against PRMBench's
# GPT-4o data (four seeds pooled, matched size): 0 gives position AUC 0.76 vs 0.69 on 91 solutions, 1 gives 0.78 vs
# 0.70 on 133 (the last step an error step in 26 %), 0.25 gives 0.74 vs 0.68 on 101 (11 %; GPT-4o's: 8 %).
CARRIED = 0.25


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


def local(steps: list[str], j: int, new_text: str, question: str) -> list[dict] | None:
    """The edit of a local contradiction at step `j` (0-based; `new_text` uses the conflicting value), or None
    when it is not one: the step's own results are recomputed from the conflicting value and every one of them
    follows from it (none stays as it was, as 140 did in "$8!/34 = \\frac{20160}{17}$ and
    $\\frac{20160}{17}/9 = 140$"); it is not the last step and states no answer (a later `# Answer` line, or a
    later step that derives a result of its own); and no value it newly writes is written by a later step, so
    nothing later builds on it (the later steps go on from the true values)."""
    if j >= len(steps) - 1 or split_answer(steps[j])[1]:
        return None
    old_body = split_answer(steps[j])[0]
    if not split_answer(steps[-1])[1] and not any(established(split_answer(step)[0]) or
                                                  set(established(old_body)) & values(step) for step in steps[j + 1:]):
        return None  # no `# Answer` line, nothing derived after it, nor its result restated: it may state the answer
    edits = propagate(steps[: j + 1], j, new_text, question=question, recompute=True, carry=False)
    if edits is None:
        return None
    new_body = split_answer(edits[0]["text"])[0]
    if not all(holds(c.lhs, c.value) for c in computations(new_body, j)) or \
            _false_equalities(new_body) > _false_equalities(old_body) or \
            set(established(new_body)) & set(established(old_body)):
        return None
    written = values(new_body) - values(old_body)
    if not written or any(written & values(step) for step in steps[j + 1:]):
        return None
    return edits


def _false_equalities(body: str) -> int:
    """How many `a = b` of a step (in `$...$` or in prose) have two numeric sides of different values."""
    false = 0
    for chain in chains(body, math_spans(body)):
        for k, relation in enumerate(chain.relations, 1):
            if relation == "=":
                left, right = (evaluate(body[a:b], {}) for a, b in chain.exprs[k - 1: k + 1])
                false += left is not None and right is not None and not equal(left, right)
    return false


def carried(steps: list[str], j: int, new_text: str, question: str) -> list[dict] | None:
    """The edits of a contradiction at step `j` carried through every later step to a changed final answer."""
    edits = propagate(steps, j, new_text, question=question, recompute=True, carry=False)
    return edits if edits is not None and final_answer_changed(steps, edits) else None


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
                later_body = split_answer(steps[j])[0]
                uses = [t for t in tokens(later_body) if t.value == value and not t.raised
                        and any(a <= t.start < b for chain in chains(later_body, math_spans(later_body))
                                for a, b in chain.exprs[:-1] if chain.relations)]
                if uses:
                    # Every later use: where one cannot be carried through, another may.
                    options.append(thinned(Placed(_option(trajectory, i, j, value, source), j + 1, len(steps)),
                                           "step_contradiction"))
    return options


def _conflicting(later: str, value: Fraction, rng: random.Random) -> tuple[str, str, Fraction] | None:
    """Step text `later` with every use of `value` replaced by another value: (text, how it wrote the value,
    the other value); None when every value drawn is written in the step already."""
    body, tail = split_answer(later)
    used = [t for t in tokens(body) if t.value == value and not t.raised]
    like = used[0].text
    for _ in range(5):
        if "." in like and "frac" not in like:  # 37.5 -> 37.4 or 38.5, in its own decimals
            wrong = Fraction(slip_decimal(like.lstrip("-"), rng)) * (-1 if value < 0 else 1)
        else:
            wrong = slipped(value, rng)
        if wrong not in values(body):
            break  # (a value the step writes already, its result say, would be recomputed along with it)
    else:
        return None
    for token in reversed(used):
        body = body[: token.start] + render(wrong, token.text, in_math=True) + body[token.end:]
    return body + tail, like, wrong


def _clear(before: str, edits: list[dict], value: Fraction, wrong: Fraction) -> bool:
    """Does the conflicting step derive a result from the other value ("So $3 = 3$" derives nothing), without
    showing the established value too (no clear conflict then)?"""
    shown = values(split_answer(edits[0]["text"])[0])
    return bool(shown - values(before) - {wrong, -wrong}) and value not in shown


def _option(trajectory: Trajectory, i: int, j: int, value: Fraction, source: str) -> Option:
    steps = list(trajectory.steps)

    def option(rng: random.Random) -> Perturbation | None:
        conflicting = _conflicting(steps[j], value, rng)
        if conflicting is None:
            return None
        text, like, wrong = conflicting
        kinds = (local, carried) if rng.random() < CARRIED else (local,)
        made = next(((kind, edits) for kind in kinds if (edits := kind(steps, j, text, trajectory.question))
                     is not None and _clear(steps[j], edits, value, wrong)), None)
        if made is None:
            return None
        kind, edits = made
        old, new = render(value, like, True), render(wrong, like, True)
        what = f"Step {i + 1} establishes ${source} = {old}$, but step {j + 1} uses ${new}$ for the same quantity."
        if kind is local:
            return Perturbation("conflicting_value", edits, what + " The later steps go on from the established "
                                "value, so only this step is false and the final answer stays.")
        return Perturbation("conflicting_value", edits, what + carried_on(edits))
    return option
