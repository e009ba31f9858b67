"""Offline missing_condition operators (PRMBench's sense): the solution applies its standard route while a
condition that route needs does not hold for the question as posed.

Three moves, each only where it fits the trajectory:
- `restrict_to_positive`: the question asks for all values (their sum, product, count) and the solution finds a
  negative one; the question now asks for positive values only, and the solution still counts the negative one.
- `drop_positivity`: the question says a quantity is positive and a step reasons from that; the word goes, and the
  step still reasons from it (a needed case split is skipped).
- `drop_plus_minus`: the question asks for all roots, their sum or product, or the smaller one, and the solution's
  last worked step writes both roots with `\\pm`; the step keeps only the positive root, as if the quantity under
  the square root's sign were known.
A given is never deleted (the question stays answerable and grammatical).
"""
from __future__ import annotations

import random
import re

from injector.model.trajectory import Trajectory
from injector.engines.offline.text import Option, Perturbation, flag, replace, split_answer

# The question asks for the whole solution set, or something computed from all of it.
ALL_VALUES = re.compile(r"\b(?:sum|product) of (?:all|the)\b|\ball (?:the )?(?:possible |real |integer |integral )?"
                        r"(?:values|solutions|roots)\b|\benter all\b|\bhow many (?:real |integer )?(?:solutions|"
                        r"values|roots)\b", re.IGNORECASE)
SMALLER = re.compile(r"\b(?:smaller|smallest|least)\b", re.IGNORECASE)
# Where "positive " can go so the question reads naturally: "all real solutions" -> "all positive real solutions".
RESTRICTABLE = re.compile(r"\b(all (?:the )?|(?:sum|product) of the )((?:real |integer |integral )?(?:values|"
                          r"solutions|roots|integers|real numbers)\b)", re.IGNORECASE)
# A variable stated equal to a number: "$x = -3$", "x=-\frac{1}{3}", "x = 4".
ASSIGNED = re.compile(r"(?<![\\\w])([a-z])\s*=\s*(-?\s*(?:\d+(?:\.\d+)?|\\d?frac\{\d+\}\{\d+\}))(?![\d.}\w^/])")
REJECTS = re.compile(r"extraneous|not a (?:valid )?solution|doesn't work|does not work|\breject|\bdiscard|"
                     r"\binvalid\b|not valid|can't be|cannot be|isn't a|is not a|\bfails\b", re.IGNORECASE)
VERIFIES = re.compile(r"\b(?:check|verify|verif|satisf|indeed|as needed)", re.IGNORECASE)
INEQUALITY = re.compile(r"<|>|\\[lg]e(?:q)?\b|\\[lg]t\b|\bless than\b|\bgreater than\b|\bat (?:most|least)\b")
SIGN_WORDS = re.compile(r"\b(?:positive|negative|nonnegative|non-negative)\b|>\s*0(?![\d.])|\\g(?:e|eq|t)\s*0(?![\d.])",
                        re.IGNORECASE)
# A step that reasons from positivity, rather than restating the question's wording.
REASONS_FROM_POSITIVE = re.compile(
    r"\b(?:since|because|as|but|know|given|says)\b[^.?!]*\bpositive\b|\b(?:is|are|has to be|have to be|must be)"
    r" (?:a |both |all )?positive\b", re.IGNORECASE)
# "positive" in the question as an attribute of what the unknowns are ("positive integers $a$ and $b$").
ATTRIBUTIVE_POSITIVE = re.compile(r"\b(an?|A|An)?(\s*)\bpositive (integers?|real numbers?|numbers?)\b")
# Phrases where "positive" names what is asked or a fixed object, not a condition on the unknowns.
NOT_A_CONDITION = re.compile(r"positive (?:difference|divisors?|factors?|square root|root|[xy]-?axis|[xy]\b|"
                             r"value)|\bhow many\b|\bnumber of\b|\bsum of\b|\bsmallest\b|\blargest\b|\bleast\b|"
                             r"\bgreatest\b|\bmaximum\b|\bminimum\b", re.IGNORECASE)


def _value(text: str) -> float:
    text = text.replace(" ", "")
    fraction = re.fullmatch(r"(-?)\\d?frac\{(\d+)\}\{(\d+)\}", text)
    if fraction:
        return (-1 if fraction.group(1) else 1) * int(fraction.group(2)) / int(fraction.group(3))
    return float(text)


def _question_variables(question: str) -> set[str]:
    return set(re.findall(r"(?<![\\A-Za-z])([a-z])(?![A-Za-z])", " ".join(re.findall(r"\$([^$]*)\$", question)) +
                          " " + question))


def restrict_to_positive_options(trajectory: Trajectory) -> list[Option]:
    question, steps = trajectory.question, trajectory.steps
    place = RESTRICTABLE.search(question)
    if not ALL_VALUES.search(question) or not place or INEQUALITY.search(question) or "positive" in question:
        return []
    if any(REJECTS.search(step) for step in steps):
        return []  # the solution weighs its values; a restriction could be read as already handled
    variables = _question_variables(question)
    stated = [(k, m.group(1), _value(m.group(2))) for k, step in enumerate(steps)
              for m in ASSIGNED.finditer(split_answer(step)[0]) if m.group(1) in variables]
    by_variable: dict[str, list[tuple[int, float]]] = {}
    for k, name, value in stated:
        by_variable.setdefault(name, []).append((k, value))
    options: list[Option] = []
    for name, values in sorted(by_variable.items()):
        negatives = [(k, v) for k, v in values if v < 0]
        if not negatives or not any(v > 0 for _, v in values):
            continue
        first = negatives[0][0]
        excluded = {v for _, v in negatives}
        # Later steps whose statement is false for the restricted question: they state or use an excluded value.
        later = [k for k in range(first + 1, len(steps)) if any(_mentions(steps[k], v) for v in excluded)
                 and not VERIFIES.search(steps[k])]  # "Check: ... (-3) ... = 49" stays true
        if not later:
            continue  # nothing carries the excluded value forward: the answer may not depend on it
        # The final answer was computed from every value, the excluded one too, so it is false now.
        answer = max(k for k, step in enumerate(steps) if re.search(r"\d", step))
        if answer > first and answer not in later:
            later.append(answer)

        def option(rng: random.Random, name=name, first=first, later=later, excluded=excluded) -> Perturbation:
            restricted = question[:place.end(1)] + "positive " + question[place.end(1):]
            shown = ", ".join(_show(v) for v in sorted(excluded))
            return Perturbation(
                "restrict_to_positive", [flag(k + 1) for k in [first, *later]],
                f"The question now asks only for positive values of ${name}$. Step {first + 1} accepts "
                f"${name} = {shown}$, which the question excludes, and the solution never checks the sign; "
                f"the steps that carry that value forward, up to the final answer, are wrong for the question "
                "as posed.", question=restricted)
        options.append(option)
    return options


def _show(value: float) -> str:
    return str(int(value)) if value == int(value) else f"{value:g}"


def _mentions(step: str, value: float) -> bool:
    # "-3", "- 3", "(-3)" and the fraction forms; the value as written in ASSIGNED's forms.
    return any(abs(_value(m.group(0)) - value) < 1e-12 for m in SIGNED.finditer(step))


# A negative number: a minus with nothing before it that it could subtract from ("x - 3" is no -3).
SIGNED = re.compile(r"(?<![\w)}\]]\s)(?<![\w)}\]])-\s*(?:\d+(?:\.\d+)?|\\d?frac\{\d+\}\{\d+\})(?![\d.])")


def _relying_steps(steps: list[str], mentions: re.Pattern, reasons: re.Pattern) -> list[int]:
    """The steps that reason from a condition, when every step that mentions it does (else [], since which
    statements the dropped condition makes false would be a guess), and the steps after the last of them that
    state a result: those conclusions are reached under the condition, skipping the case the question now allows
    ("since $b$ is positive, $b^2 = 1$", then "$b = 1$", "$a = 3$", the answer)."""
    touching = [k for k, step in enumerate(steps) if mentions.search(split_answer(step)[0])]
    if not touching or not all(reasons.search(steps[k]) for k in touching):
        return []
    return touching + [k for k in range(touching[-1] + 1, len(steps)) if re.search(r"\d", steps[k])]


def drop_positivity_options(trajectory: Trajectory) -> list[Option]:
    question, steps = trajectory.question, trajectory.steps
    if NOT_A_CONDITION.search(question) or re.search(r"\bfor (?:all|every|each|any) positive", question):
        # Counting or extremal questions would lose their bound; "for all positive integers n" quantifies a given
        # identity, and dropping it strengthens the given.
        return []
    if not ATTRIBUTIVE_POSITIVE.search(question):
        return []
    relying = _relying_steps(steps, SIGN_WORDS, REASONS_FROM_POSITIVE)
    if not relying:
        return []

    def option(rng: random.Random) -> Perturbation:
        def unsay(match: re.Match) -> str:
            article, space, noun = match.group(1), match.group(2), match.group(3)
            if article:  # "a positive integer" -> "an integer"
                article = (article[0] + "n") if noun[0] in "aeiou" and article.lower() == "a" else article
            return f"{article or ''}{space}{noun}"
        new_question = ATTRIBUTIVE_POSITIVE.sub(unsay, question)
        return Perturbation(
            "drop_positivity", [flag(k + 1) for k in relying],
            f"The question no longer says the quantities are positive. Step {relying[0] + 1} still reasons from "
            "their being positive, so the case of non-positive values, which the question now allows, is never "
            "examined.", question=new_question)
    return [option]


# ", assuming $b \neq 0$" and its kin: a clause that only states a quantity is nonzero.
NONZERO_CLAUSE = re.compile(
    r",?\s*(?:assuming|where|given that|and)\s+\$?\s*([a-z])\s*(?:\\neq|\\ne)\s*0\s*\$?(?=[.?!,])")
NONZERO_WORDS = re.compile(r"\bnon-?zero\b|\\neq?\s*0(?![\d.])|\bnot (?:equal to )?\$?(?:0|zero)\b|≠\s*0",
                           re.IGNORECASE)
REASONS_FROM_NONZERO = re.compile(
    r"\b(?:since|because|as|know|given|assum\w*)\b[^.?!]*(?:non-?zero|\\neq?\s*0|not (?:equal to )?\$?(?:0|zero))|"
    r"\b(?:is|are) (?:not (?:equal to )?\$?(?:0|zero)|non-?zero)\b", re.IGNORECASE)


def drop_nonzero_options(trajectory: Trajectory) -> list[Option]:
    question, steps = trajectory.question, trajectory.steps
    clause = NONZERO_CLAUSE.search(question)
    if not clause:
        return []
    relying = _relying_steps(steps, NONZERO_WORDS, REASONS_FROM_NONZERO)
    if not relying:
        return []

    def option(rng: random.Random) -> Perturbation:
        name = clause.group(1)
        return Perturbation(
            "drop_nonzero", [flag(k + 1) for k in relying],
            f"The question no longer says ${name} \\neq 0$. Step {relying[0] + 1} still takes ${name}$ to be "
            f"nonzero (and divides by it), so the case ${name} = 0$, which the question now allows, is never "
            "examined.", question=question[:clause.start()] + question[clause.end():])
    return [option]


def drop_plus_minus_options(trajectory: Trajectory) -> list[Option]:
    """Where the `\\pm` step is the solution's last word (no later number, no stated answer to keep consistent)."""
    question, steps = trajectory.question, trajectory.steps
    if not (ALL_VALUES.search(question) or SMALLER.search(question)):
        return []
    plus_minus = re.compile(r"\\pm(?![A-Za-z])")
    options: list[Option] = []
    for index, step in enumerate(steps):
        body, tail = split_answer(step)
        if not plus_minus.search(body):
            continue
        # Honest only when no later step works with the two roots (nothing to keep consistent): every later step
        # up to the answer states no number and no formula.
        if any(re.search(r"\d|\$", split_answer(later)[0]) for later in steps[index + 1:]):
            continue
        if any(split_answer(later)[1] or re.search(r"\\boxed", later) for later in steps[index:]):
            continue  # a stated final answer would keep both roots: the solution would contradict itself
        # ... and the step itself states the roots only: one formula, no other number around it.
        if len(re.findall(r"\$[^$]*\$", body)) != 1 or re.search(r"\d", re.sub(r"\$[^$]*\$", "", body)):
            continue

        def option(rng: random.Random, index=index, body=body, tail=tail) -> Perturbation:
            text = plus_minus.sub("+", body) + tail
            return Perturbation("drop_plus_minus", [replace(index + 1, text)],
                                f"Step {index + 1} keeps only the root with the plus sign, as if the other one "
                                "were ruled out; the question asks for all the roots (or the smaller one), and "
                                "nothing rules it out.")
        options.append(option)
    return options


def missing_condition_options(trajectory: Trajectory) -> list[Option]:
    """Every missing-condition move that fits this trajectory (none when nothing fits)."""
    return [*restrict_to_positive_options(trajectory), *drop_positivity_options(trajectory),
            *drop_nonzero_options(trajectory),
            *drop_plus_minus_options(trajectory)]
