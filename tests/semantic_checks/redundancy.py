"""redundancy: the inserted steps are true, re-derive what the solution already has, and can be removed: without
them the solution is the original, word for word. No re-check cue words, no restated branch of an "or"."""
from __future__ import annotations

import re

from ._reading import DOLLARS, answer, body, equal, numbers, numeric_equalities

# The probe's top features on PRMBench and on the old offline operator: words that give a re-check away.
CUES = re.compile(r"\b(?:check|checks|checking|again|verify|verified|verifies|note|restating|restate|indeed|"
                  r"once more|as found above|in other words|confirm|confirms|double)\b", re.IGNORECASE)


def written(text: str) -> set[str]:
    """The numbers a text has written, the numerator and denominator of a fraction too (`\\frac{4}{2}` has
    written 4 and 2, so a step recovering 4 from it derives nothing new)."""
    return numbers(text) | numbers(re.sub(r"\\[dt]?frac\{(-?\d+)\}\{(\d+)\}", r" \1 ; \2 ", text))


def check(original, candidate) -> list[str]:
    problems = []
    steps, errors, changed = candidate["modified_process"], candidate["error_steps"], candidate["modified_steps"]
    if not errors or sorted(errors) != sorted(changed):
        return [f"error steps {errors} must be exactly the inserted steps {changed}"]
    without = [step for k, step in enumerate(steps, 1) if k not in errors]
    if without != list(original.steps):
        problems.append("removing the inserted steps does not give back the original solution")
    if answer(steps) != answer(list(original.steps)):
        problems.append("final answer changed")
    disjunctions = [math for step in original.steps if re.search(r"\bor\b", step)
                    for math in DOLLARS.findall(step)]
    for k in errors:
        text = body(steps[k - 1])
        claims = numeric_equalities(text)
        if not claims:
            problems.append(f"step {k} claims no equation that can be evaluated: {text!r}")
        for left, right in claims:
            if not equal(left, right):
                problems.append(f"step {k}: {left} = {right} is false")
        known = written(original.question + " " + " ".join(body(s) for s in steps[: k - 1]))
        if claims and not numbers(claims[-1][1]) <= known:
            problems.append(f"step {k} derives something the solution did not already have: {claims[-1]}")
        cue = CUES.search(text)
        if cue:
            problems.append(f"step {k} says {cue.group(0)!r}, a word that gives the inserted step away")
        for math in DOLLARS.findall(text):
            if math.strip() in (d.strip() for d in disjunctions):
                problems.append(f"step {k} restates ${math}$, one branch of an 'or'")
    return problems
