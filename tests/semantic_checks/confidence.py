"""confidence: the first error step asserts (or "corrects" to) a value other than the one the original derived
there, with certainty and without deriving it; the steps after it carry the false value consistently; certainty
phrases sit on correct steps at least as often as on error steps, so they do not give the label away."""
from __future__ import annotations

import re

from ._reading import answer, body, equal, math_parts, numbers, numeric_equalities

CERTAIN = re.compile(r"\b(?:clearly|certainly|of course|obviously|surely|without a doubt|no question|no doubt|sure|"
                     r"definitely|naturally|without question|clear|no need to check|no further check|"
                     r"can't be anything else|nothing more needs|doubt|obvious|easy to see|"
                     r"for sure|anyone can see|certain|certainty|plainly|beyond any doubt|undoubtedly|evident|evidently|well known|can see|can be sure|it is plain|must be|unquestionably|goes without saying|right away)\b", re.IGNORECASE)


def _counterpart(original, steps: list[str], k: int) -> str:
    """The original step that error step `k` replaces, or (for an inserted step) the step it follows."""
    if len(steps) == len(original.steps):
        return original.steps[k - 1]
    return steps[k - 2]


def check(original, candidate) -> list[str]:
    problems = []
    steps, errors = candidate["modified_process"], candidate["error_steps"]
    if not errors:
        return ["no error step"]
    first = min(errors)
    said, before = body(steps[first - 1]), body(_counterpart(original, steps, first))
    if not CERTAIN.search(said):
        problems.append(f"step {first} carries no certainty phrase")
    derived = set()
    for math in math_parts(before):
        if "=" in math:
            derived |= numbers(math.rsplit("=", 1)[1])
    stated = numbers(said) - numbers(before)
    if not derived or not stated:
        problems.append(f"step {first} states no value other than step's original ({sorted(derived)})")
    for left, right in numeric_equalities(said):
        if numbers(right) & stated and re.search(r"[-+*/]|\\cdot|\\times|\\div|\\frac", left):
            problems.append(f"step {first} derives its value ({left} = {right}) instead of asserting it")
    if answer(list(original.steps)) is not None and answer(steps) == answer(list(original.steps)):
        problems.append("the false value does not reach the final answer")
    if answer(list(original.steps)) is None:
        # No `# Answer` line: the candidate ends at its last step that states a number ("We did it!" states none;
        # after a "correction" of the last result, that is the correction): it must be an error step.
        last = max((k for k, step in enumerate(steps, 1) if re.search(r"\d", body(step))), default=None)
        if last is not None and last not in errors:
            problems.append(f"the false value does not reach step {last}, the last one with a result (the "
                            "solution has no # Answer line)")
    for k in errors:
        if k == first:
            continue
        for left, right in numeric_equalities(body(steps[k - 1])):
            if not equal(left, right):
                problems.append(f"step {k}: {left} = {right} does not follow from the asserted value consistently")
    if len(steps) == len(original.steps):
        problems += _carried_half_way(list(original.steps), steps, errors, derived - numbers(said), stated)
    for k in candidate["modified_steps"]:
        if k in errors:
            continue
        text = body(steps[k - 1])
        if not CERTAIN.search(text):
            problems.append(f"step {k} is changed but is neither an error nor given a certainty phrase")
        for left, right in numeric_equalities(text):
            if not equal(left, right):
                problems.append(f"step {k} is marked correct but says {left} = {right}")
    return problems


def _carried_half_way(original: list[str], steps: list[str], errors: list[int], old: set[str],
                      new: set[str]) -> list[str]:
    """A later step that uses the false value in place of the true one but keeps, unchanged, a value derived
    from the true one in words (true value ± 1 or 2, twice or half it): the false value carried half-way."""
    problems = []
    for k in sorted(errors)[1:]:
        before, after = numbers(body(original[k - 1])), numbers(body(steps[k - 1]))
        for value in (v for v in old if v.isdigit() and int(v) >= 3 and v in before):
            if not new & after:
                continue
            n = int(value)
            kept = {str(m) for m in (n - 2, n - 1, n + 1, n + 2, 2 * n)} | ({str(n // 2)} if n % 2 == 0 else set())
            for near in sorted(kept & before & after):
                problems.append(f"step {k} uses the false value but keeps {near}, derived from the true {value}")
    return problems


def check_all(pairs) -> list[str]:
    on_errors = on_correct = 0
    for _, candidate in pairs:
        for k, step in enumerate(candidate["modified_process"], 1):
            if CERTAIN.search(body(step)):
                if k in candidate["error_steps"]:
                    on_errors += 1
                else:
                    on_correct += 1
    if on_correct < on_errors:
        return [f"certainty phrases on {on_errors} error steps but only {on_correct} correct steps: the phrase "
                "gives the label away"]
    return []
