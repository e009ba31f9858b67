"""circular_logic: a result's derivation is gone, the result is taken as given, and later steps lean on it to
"derive" it back; the final answer is unchanged."""
from __future__ import annotations

from ._reading import answer, body, equal, math_parts, numbers, numeric_equalities


def check(original, candidate) -> list[str]:
    problems = []
    steps, errors, changed = candidate["modified_process"], candidate["error_steps"], candidate["modified_steps"]
    if answer(steps) != answer(list(original.steps)):
        problems.append(f"final answer changed: {answer(list(original.steps))!r} -> {answer(steps)!r}")
    if len(errors) < 2 or not set(errors) <= set(changed):
        return problems + [f"error steps {errors} must be at least an assumption and a step leaning on it, all "
                           f"among the changed steps {changed}"]
    gone = [step for step in original.steps if step not in steps]
    if not gone:
        return problems + ["no original step is gone: the derivation is still there (a re-check, not a loop)"]
    # What the gone steps derived: the value at the end of each of their numeric or solved equations.
    derived = set()
    for step in gone:
        for math in math_parts(body(step)):
            if "=" in math:
                derived |= numbers(math.rsplit("=", 1)[1])
    assumption = steps[errors[0] - 1]
    assumed = numbers(body(assumption)) & derived
    if not assumed:
        return problems + [f"step {errors[0]} does not state a value the removed derivation produced "
                           f"({sorted(derived)})"]
    for left, right in numeric_equalities(assumption):
        if any(value in numbers(right) for value in assumed) and any(c in left for c in "+-*/\\"):
            problems.append(f"step {errors[0]} computes {left} = {right}: it derives the value, it does not "
                            "assume it")
    value = sorted(assumed)[0]
    before = [k for k, step in enumerate(steps[: errors[0] - 1], 1) if value in numbers(body(step))]
    if before and not any(value in numbers(original.question) for _ in [0]):
        problems.append(f"the assumed value {value} already appears in step {before[0]}, before the assumption")
    leaning = [k for k in errors[1:] if value in numbers(body(steps[k - 1]))]
    if not leaning:
        problems.append(f"no later error step comes back to the assumed value {value}")
    for k in errors:
        for left, right in numeric_equalities(body(steps[k - 1])):
            if not equal(left, right):
                problems.append(f"step {k}: {left} = {right} is false (a loop, not a false step)")
    kept = [step for k, step in enumerate(steps, 1) if k not in changed]
    position = iter(original.steps)
    if not all(step in position for step in kept):
        problems.append("the unchanged steps are not the original steps in order")
    return problems


def check_all(pairs) -> list[str]:
    """Varied wording: the loop's own words (those not in the original solution) are not one sentence pair
    repeated across the candidates."""
    import collections
    import re

    def own_words(text: str, original_words: set[str]) -> tuple[str, ...]:
        return tuple(w for w in re.findall(r"[a-z']+", body(text).lower()) if w not in original_words)

    skeletons = collections.Counter()
    for original, candidate in pairs:
        words = set(re.findall(r"[a-z']+", " ".join(original.steps).lower()))
        steps = candidate["modified_process"]
        skeleton = tuple(own_words(steps[k - 1], words) for k in candidate["error_steps"])
        if any(skeleton):  # a loop worded only with its own solution's words repeats no canned sentence
            skeletons[skeleton] += 1
    if not skeletons:
        return []
    skeleton, count = skeletons.most_common(1)[0]
    if len(pairs) >= 8 and count > 0.25 * len(pairs):
        return [f"{count} of {len(pairs)} loops share the wording {skeleton}"]
    return []
