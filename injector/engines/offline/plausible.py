"""Guards every answer-changing offline perturbation passes before it is offered (one owner for all operators):
- the steps from the edit on write their mathematics inside balanced `$...$`, so every number the edit changes
  was seen by the recomputation (`math_spans` misses bare LaTeX and the text after an unclosed `$`);
- the final answer is not a multiple-choice letter, which no offline move can recompute against the choices;
- no changed step states an implausible result: a negative length, area or volume, a figure's angle over 180° (any
  angle over 360°), or a
  factorial that is not one.
"""
from __future__ import annotations

import math
import re

from injector.answer.final import final_answer_of_steps

_DOLLAR = re.compile(r"(?<!\\)\$")
_BARE_LATEX = re.compile(r"\\(?:frac|dfrac|sqrt|cdot|times|div|pm|le|ge|neq|pi|circ|left|right|boxed)(?![A-Za-z])")
_LETTER = re.compile(r"\(?\s*(?:\\text(?:bf)?\{\s*)?\(?([A-E])\)?\s*\}?\s*\)?")
_NEGATIVE_MEASURE = re.compile(r"=\s*-\s*\d[\d.,]*\s*\$?\s*(?:\\text\{\s*)?(?:cubic|square|sq\.?|units?\b|"
                               r"(?:centi|milli)?met(?:er|re)s?\b|cm|mm|km|inch|inches|feet|foot|ft|yards?|miles?)",
                               re.IGNORECASE)
_ANGLE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°|\s*degrees?\b)")
_FACTORIAL = re.compile(r"(?<![\d.])(\d{1,2})\s*!\s*=\s*(\d+)(?![\d.])")


def cleanly_delimited(step: str) -> bool:
    """Balanced `$`, and no LaTeX command outside them."""
    if len(_DOLLAR.findall(step)) % 2:
        return False
    outside = "".join(part for n, part in enumerate(_DOLLAR.split(step)) if n % 2 == 0)
    outside = re.sub(r"\\\[.*?\\\]|\\\(.*?\\\)", " ", outside, flags=re.DOTALL)
    return not _BARE_LATEX.search(outside)


def letter_answer(steps: list[str]) -> bool:
    """Is the stated final answer a multiple-choice letter (`\\boxed{D}`, `# Answer` then `(B)`)?"""
    answer = final_answer_of_steps(steps)
    return answer is not None and _LETTER.fullmatch(answer.strip()) is not None


def implausible(step: str) -> str | None:
    """What is implausible in a step (None when nothing is found)."""
    if _NEGATIVE_MEASURE.search(step):
        return "a negative length, area or volume"
    for match in _ANGLE.finditer(step):
        # A named angle of a figure ("\angle B", "angle ABC") is at most 180 degrees; any angle at most 360.
        named = re.search(r"angle\b[^.;]{0,40}$", step[max(0, match.start() - 48):match.start()])
        if float(match.group(1)) > (180 if named else 360):
            return "an angle over 180 degrees" if named else "an angle over 360 degrees"
    for match in _FACTORIAL.finditer(step):
        if math.factorial(int(match.group(1))) != int(match.group(2)):
            return f"{match.group(1)}! stated as {match.group(2)}"
    return None


def refusal(original: list[str], modified: list[str], changed: list[int]) -> str | None:
    """Why an answer-changing perturbation must not be offered (None when it may). `changed` are the 1-based
    numbers of the steps it changed or inserted."""
    if letter_answer(original) or letter_answer(modified):
        return "the final answer is a multiple-choice letter"
    first = min(changed, default=len(modified) + 1)
    if not all(cleanly_delimited(step) for step in original[first - 1:]):
        return "mathematics outside balanced $...$ from the edit on"
    for number in changed:
        if 1 <= number <= len(modified):
            reason = implausible(modified[number - 1])
            if reason:
                return f"step {number} states {reason}"
    return None
