"""What every offline operator shares: the `Perturbation` it returns, edit builders, and the text patterns it
recognises in PRM800K-style steps (numbers, results, the `# Answer` tail)."""
from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Callable

# A standalone number: not part of a word, a LaTeX argument in braces, an exponent, a subscript or a longer number.
NUMBER = re.compile(r"(?<![\w.^_\\{])\d+(?:\.\d+)?(?![\w^}]|\.\d)")
# A computed quantity: a number right after "=" (optionally a dollar sign), e.g. "$4 \cdot 2.75 = 11$".
RESULT = re.compile(r"=\s*(?:\\\$\s*)?(" + NUMBER.pattern + ")")
# PRMBench's phase-2 files write line breaks around `# Answer` as a literal `\n` (backslash, n): part of the tail too.
ANSWER_MARK = re.compile(r"(?:\n|\\n)*#+ *(?:Final )?Answer\b", re.IGNORECASE)


@dataclass
class Perturbation:
    """An operator's output, as edits of the original steps (the form the edit contract uses)."""

    operator: str
    edits: list[dict[str, Any]]
    reason: str
    question: str | None = None
    """The new question, or None when it is unchanged."""


def replace(step: int, text: str) -> dict[str, Any]:
    return {"op": "replace", "step": step, "text": text, "error": True}


def insert(after: int, text: str) -> dict[str, Any]:
    return {"op": "insert", "after": after, "text": text, "error": True}


def flag(step: int) -> dict[str, Any]:
    return {"op": "flag", "step": step}


Option = Callable[[random.Random], "Perturbation | None"]  # None: this option does not apply after all


def split_answer(step: str) -> tuple[str, str]:
    """A step's body and its `# Answer ...` tail (empty when there is none), so operators leave the answer alone."""
    mark = ANSWER_MARK.search(step)
    return (step[: mark.start()], step[mark.start():]) if mark else (step, "")



def replace_span(text: str, start: int, end: int, new: str) -> str:
    return text[:start] + new + text[end:]


def lower_first(text: str) -> str:
    # "The pens cost ..." -> "the pens cost ...", but leave "I", LaTeX and acronyms alone.
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text
