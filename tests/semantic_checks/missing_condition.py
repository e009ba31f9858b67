"""Semantic check of offline missing_condition candidates, independent of the operators.

What it asks of a candidate, from the original, the candidate and its own parsing only:
- the question stays a whole question: every number it gave is still there (a dropped "≠ 0" aside), it still asks
  something, and the edit leaves no broken wording ("an integer" not "a integer", no "some"-for-a-number);
- the first error step is the first step whose content depends on the changed condition:
  * a restriction added to the question ("positive"): the first step that states a value the restriction
    excludes, the value found in any form (inside brackets, products, exponents or roots, or in words), and the
    last step that states a result is an error step (the answer counted the excluded value);
  * a condition taken from the question ("positive", "≠ 0"): the first step that mentions that kind of condition;
  * the question unchanged: a `\\pm` taken from a step, where the question asks for all the roots (or their sum,
    product, or the smaller one) and no later step works with numbers.
"""
from __future__ import annotations

import difflib
import re

NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
                "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "half": 0.5, "third": 1 / 3, "quarter": 0.25}
SIGN_CONDITION = re.compile(r"positive|negative|nonnegative|non-negative|>\s*0(?![\d.])|\\g(?:e|eq|t)\s*0(?![\d.])|"
                            r"greater than (?:0|zero)", re.IGNORECASE)
NONZERO_CONDITION = re.compile(r"non-?zero|\\neq?\s*0(?![\d.])|≠\s*0|not (?:equal to )?\$?\s*(?:0|zero)\b|"
                               r"\\not=\s*0", re.IGNORECASE)
ASKS = re.compile(r"\b(?:find|what|which|how|compute|determine|enter|express|evaluate|simplify|solve)\b",
                  re.IGNORECASE)
ALL_ROOTS = re.compile(r"\ball\b.*\b(?:roots|solutions|values)\b|\b(?:sum|product) of the (?:roots|solutions)\b|"
                       r"\bsmaller\b|\bsmallest\b|\bleast\b|\benter all\b", re.IGNORECASE)


def _flat(text: str) -> str:
    """Math without the typesetting that hides a number: `\\left(-3\\right)` -> `(-3)`, `\\dfrac` -> `\\frac`."""
    text = re.sub(r"\\(?:left|right|big|Big|displaystyle|,|;|!)", "", text)
    text = text.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac").replace("$", " ").replace("−", "-")
    return re.sub(r"\s+", " ", text)


def _numbers(text: str) -> list[float]:
    """Every signed number in the text, wherever it sits (exponents, roots, products, fractions) and in words:
    a minus counts as a sign when nothing it could subtract from stands before it."""
    flat = _flat(text)
    found = []
    for m in re.finditer(r"(?P<sign>-\s*)?\\frac\{(?P<p>\d+)\}\{(?P<q>\d+)\}", flat):
        signed = m.group("sign") and not re.search(r"[\w)}\]]\s*$", flat[:m.start()])
        found.append((-1 if signed else 1) * int(m.group("p")) / int(m.group("q")))
    for m in re.finditer(r"(?P<sign>-\s*)?(?<![\d.])(?P<n>\d+(?:\.\d+)?)(?![\d.])", flat):
        signed = m.group("sign") and not re.search(r"[\w)}\]]\s*$", flat[:m.start()])
        found.append(-float(m.group("n")) if signed else float(m.group("n")))
    for m in re.finditer(r"\b(negative |minus )?(" + "|".join(NUMBER_WORDS) + r")\b", text, re.IGNORECASE):
        found.append((-1 if m.group(1) else 1) * NUMBER_WORDS[m.group(2).lower()])
    return found


def _stated_values(step: str) -> list[tuple[str, float]]:
    """(variable, value) for each "x = value" a step states (the value a plain or fraction number, maybe signed)."""
    flat = _flat(step)
    found = []
    for m in re.finditer(r"(?<![\\\w])([a-z])\s*=\s*(-)?\s*(?:\\frac\{(\d+)\}\{(\d+)\}|(\d+(?:\.\d+)?))(?![\d.\w{^/])",
                         flat):
        value = int(m.group(3)) / int(m.group(4)) if m.group(3) else float(m.group(5))
        found.append((m.group(1), -value if m.group(2) else value))
    return found


def _question_problems(original: str, modified: str, removed: str) -> list[str]:
    problems = []
    kept_numbers = _numbers(modified)
    lost = [n for n in _numbers(original) if n not in kept_numbers]
    # A 0 may go only with a dropped "≠ 0" condition: that is a condition, not a given.
    if lost and not (set(lost) == {0.0} and NONZERO_CONDITION.search(removed)):
        problems.append(f"the question lost the given number(s) {lost}")
    if not ASKS.search(modified):
        problems.append("the question no longer asks anything")
    if re.search(r"\ba [aeiou]\w", modified, re.IGNORECASE) and not re.search(r"\ba [aeiou]\w", original,
                                                                               re.IGNORECASE):
        problems.append("broken article: 'a' before a vowel")
    if re.search(r"\ban [b-df-hj-np-tv-z]", modified, re.IGNORECASE) and not re.search(
            r"\ban [b-df-hj-np-tv-z]", original, re.IGNORECASE):
        problems.append("broken article: 'an' before a consonant")
    if re.search(r"\bsome\b", modified) and not re.search(r"\bsome\b", original):
        problems.append("a number was made vague ('some ...')")
    if re.search(r" [,.?!]|  ", modified) and not re.search(r" [,.?!]|  ", original):
        problems.append("stray space left by the edit")
    return problems


def _word_diff(original: str, modified: str) -> tuple[list[str], list[str]]:
    a, b = original.split(), modified.split()
    added, removed = [], []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag in ("delete", "replace"):
            removed += a[i1:i2]
        if tag in ("insert", "replace"):
            added += b[j1:j2]
    return added, removed


def check(original, candidate: dict) -> list[str]:
    steps = candidate["modified_process"]
    errors = sorted(candidate["error_steps"])
    if not errors:
        return ["no error step"]
    first = errors[0]
    problems: list[str] = []
    question, modified_question = original.question, candidate["modified_question"]
    if modified_question != question:
        if candidate["modified_steps"]:
            problems.append(f"the question changed and steps {candidate['modified_steps']} were rewritten too")
        added, removed = _word_diff(question, modified_question)
        problems += _question_problems(question, modified_question, " ".join(removed))
        # A word may move ("a positive" -> "an"): compare what is new and what is gone, not their positions.
        articles = {"a", "an"}  # "a positive integer" -> "an integer" changes the article only
        new_words = {w.lower().strip(",.?$") for w in added} - {w.lower().strip(",.?$") for w in removed} - articles
        gone = " ".join(w for w in removed if w.lower() not in articles)
        if new_words and gone.strip(" ,"):
            problems.append(f"the question both gained {sorted(new_words)} and lost {removed!r}")
        elif new_words:
            if not any(SIGN_CONDITION.search(w) for w in new_words):
                return problems + [f"added words {sorted(new_words)} are no restriction this check knows"]
            # The restriction excludes the non-positive values the solution states for its unknowns.
            excluded = {v for step in steps for _, v in _stated_values(step) if v <= 0}
            if not excluded:
                return problems + ["the solution states no value the restriction excludes"]
            uses = [k for k, step in enumerate(steps, 1) if any(v in excluded for v in _numbers(step))]
            if uses[0] != first:
                problems.append(f"first error step {first}, but step {uses[0]} is the first to state an excluded "
                                f"value ({sorted(excluded)})")
            result = max(k for k, step in enumerate(steps, 1) if _numbers(step))
            if result not in errors:
                problems.append(f"the final result (step {result}) counts an excluded value but is not an error")
        else:
            if SIGN_CONDITION.search(gone):
                condition = SIGN_CONDITION
            elif NONZERO_CONDITION.search(gone) or "\\neq" in gone or "\\ne" in gone:
                condition = NONZERO_CONDITION
            else:
                return problems + [f"the question lost {removed!r}, which is no condition this check knows"]
            uses = [k for k, step in enumerate(steps, 1) if condition.search(step)]
            if not uses:
                problems.append(f"no step depends on the dropped condition {gone!r}")
            elif uses[0] != first:
                problems.append(f"first error step {first}, but step {uses[0]} is the first to use the dropped "
                                f"condition {gone!r}")
    else:
        changed = candidate["modified_steps"]
        if changed != [first]:
            return [f"the question is unchanged; expected one rewritten error step, got {changed} / {errors}"]
        before, after = original.steps[first - 1], steps[first - 1]
        if "\\pm" not in before or "\\pm" in after:
            problems.append(f"step {first} does not drop a \\pm")
        if not ALL_ROOTS.search(question):
            problems.append("a \\pm dropped where the question does not ask for all the roots (or the smaller)")
        if any(_numbers(step) for step in steps[first:]):
            problems.append("later steps work with numbers the dropped root would change")
    return problems
