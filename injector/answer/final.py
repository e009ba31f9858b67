"""Final-answer extraction and math equivalence for step-by-step solutions.

Rule for a solution's final answer: the content of the last `\\boxed{…}`, else the text after the last
`# Answer`, `# Final Answer` or `Final Answer:` (PRMBench's `# Answer\\n3`, with a literal backslash and `n`, is
read as `# Answer` and `3`). Two answers are equivalent when they are equal after
`normalize_answer`, or when math-verify says so (except for base-notation numerals such as `40_9`, which must
match exactly).
"""
from __future__ import annotations

import functools
import logging
import os
import re
import threading
from typing import Any

from injector.answer.contract import LATEX_COMMANDS

_BOXED = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
# `# Answer` / `# Final Answer` as a heading (PRM800K), `Final Answer:` anywhere (optionally in bold). A heading
# may also follow a literal `\n` (see below).
_ANSWER_MARKER = re.compile(
    r"(?:^|(?<=\\n))[ \t]*#+[ \t]*(?:final[ \t]+)?answer\b[ \t]*:?|(?:\*\*)?final[ \t]+answer[ \t]*:(?:\*\*)?",
    re.IGNORECASE | re.MULTILINE,
)
# PRMBench's phase-2 files write many answer steps as `# Answer\n3` with a literal backslash and `n` (two
# characters) where PRM800K has line breaks. Only right after an `# Answer` heading is a literal `\n` read as a
# line break (the text itself is never changed); anywhere else it is LaTeX: `\neq`, `\nu`, `\nabla`.
_LITERAL_NEWLINE = re.compile(r"[ \t]*\\n")
_LETTERS = re.compile(r"[A-Za-z]*")


def _after_literal_newlines(text: str, position: int) -> int:
    """`position` moved past the literal `\n`s that follow an answer heading there; one that begins a LaTeX
    command (`# Answer\nu` is the answer `\nu`) is kept."""
    while (newline := _LITERAL_NEWLINE.match(text, position)) is not None:
        letters = _LETTERS.match(text, newline.end() - 1)
        assert letters is not None  # `[A-Za-z]*` matches everywhere
        if letters.group() in LATEX_COMMANDS:
            break
        position = newline.end()
    return position


def _balanced_group(text: str, open_at: int) -> str | None:
    """Content of the brace group opening at `text[open_at]`, or None when it never closes."""
    depth, pos = 0, open_at
    while pos < len(text):
        char = text[pos]
        if char == "\\":  # `\{` and `\}` are literal braces, not grouping
            pos += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : pos]
        pos += 1
    return None


def _boxed_contents(text: str) -> list[str]:
    """Non-empty contents of every `\\boxed{…}` (or `\\boxed 5`) in order of appearance."""
    contents = []
    for match in _BOXED.finditer(text):
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos < len(text) and text[pos] == "{":
            content = _balanced_group(text, pos)
        else:
            bare = re.match(r"[^\s$]+", text[pos:])
            content = bare.group(0).rstrip(".,;") if bare else None  # `\boxed 5.` ends a sentence
        if content and content.strip():
            contents.append(content.strip())
    return contents


def extract_final_answer(text: str) -> str | None:
    """The last `\\boxed{…}` content, else the text after the last answer marker (stripped), else None."""
    if not text:
        return None
    boxed = _boxed_contents(text)
    if boxed:
        return boxed[-1]
    markers = list(_ANSWER_MARKER.finditer(text))
    if not markers:
        return None
    last = markers[-1]
    start = _after_literal_newlines(text, last.end()) if last.group().lstrip().startswith("#") else last.end()
    answer = text[start:].strip()
    return answer or None


def final_answer_of_steps(steps: list[str]) -> str | None:
    """Final answer of a whole step list: the last boxed anywhere wins, even over a later `# Answer`."""
    return extract_final_answer("\n".join(steps))


_WRAPPERS = (("$$", "$$"), ("$", "$"), ("\\[", "\\]"), ("\\(", "\\)"))


def _peel(answer: str) -> str:
    """Drop surrounding math delimiters and a trailing period, repeatedly (`$10$.` -> `10`)."""
    while True:
        before = answer
        answer = answer.strip()
        if answer.endswith(".") and not answer.endswith("\\."):
            answer = answer[:-1].strip()
        for opening, closing in _WRAPPERS:
            inner = answer[len(opening) : -len(closing)]
            if (
                len(answer) >= len(opening) + len(closing)
                and answer.startswith(opening)
                and answer.endswith(closing)
                and opening not in inner  # `$a$ and $b$` is not one wrapped answer
            ):
                answer = inner
                break
        if answer == before:
            return answer


def _drop_spaces(answer: str) -> str:
    # Keep one space where it ends a control word before a letter: `\cdot b` must not become `\cdotb`.
    return re.sub(
        r"(\\[A-Za-z]+)\s+(?=[A-Za-z])|\s+",
        lambda m: m.group(1) + " " if m.group(1) else "",
        answer,
    )


def normalize_answer(answer: str) -> str:
    """Canonical text of an answer for exact comparison (and for math-verify).

    Drops surrounding `$…$`, `$$…$$`, `\\[…\\]`, `\\(…\\)`, a trailing period, `\\left`/`\\right`, the thin
    spaces `\\!`, `\\,`, `\\;`, `\\:` and all whitespace (except one space that ends a control word before a
    letter); `\\dfrac`/`\\tfrac` become `\\frac`; single-character sub/superscripts lose their braces
    (`_{5}` -> `_5`). A `\\text{…}` wrapping the whole answer is unwrapped (`\\text{east}` -> `east`); inner
    ones are kept, since unwrapping `5\\text{ cm}` would glue the unit to the number, and math-verify drops
    units itself.
    """
    answer = _peel(answer)
    whole_text = re.fullmatch(r"\\text\{([^{}]*)\}", answer)
    if whole_text:
        answer = whole_text.group(1)
    answer = re.sub(r"\\[!,;:]|\\ ", "", answer)
    answer = re.sub(r"\\(?:left|right)(?![A-Za-z])", "", answer)
    answer = re.sub(r"\\[dt]frac(?![A-Za-z])", r"\\frac", answer)
    answer = re.sub(r"([_^])\{([A-Za-z0-9])\}", r"\1\2", answer)
    answer = _drop_spaces(answer)
    return _peel(answer)


# A numeral written in a base (`40_9`, `4210_{5}`, `AB_{16}`): digits and capitals, not a variable like `x_1`.
_BASE_NUMERAL = re.compile(r"(?<![A-Za-z0-9\\])([0-9A-Z]+)_\{?\d")


def _has_base_numeral(answer: str) -> bool:
    return any(
        len(m.group(1)) > 1 or m.group(1).isdigit() for m in _BASE_NUMERAL.finditer(answer)
    )


def _base_key(answer: str) -> str:
    return re.sub(r"_\{(\d+)\}", r"_\1", answer)  # `_{10}` = `_10` for a base, never for a variable


class _InsideOurCalls(logging.Filter):
    """Drops math-verify's log records emitted while this module calls it (timeouts, "timeout disabled")."""

    active = threading.local()

    def filter(self, record: logging.LogRecord) -> bool:
        return not getattr(self.active, "on", False)


_QUIET = _InsideOurCalls()
_MATH_VERIFY_LOGGERS = ("math_verify.parser", "math_verify.grader", "math_verify.utils")


@functools.lru_cache(maxsize=1)
def _math_verify() -> Any:
    """Import math-verify on first use (about 0.3 s, mostly sympy) and silence it during our calls."""
    import math_verify

    for name in _MATH_VERIFY_LOGGERS:
        logging.getLogger(name).addFilter(_QUIET)
    return math_verify


def _timeout_seconds() -> int | None:
    # math-verify times out with signal.alarm, which only works in the main thread (and only on POSIX; its
    # Windows fallback spawns a process per call). Elsewhere run without a timeout rather than fail.
    if os.name == "posix" and threading.current_thread() is threading.main_thread():
        return 5
    return None


@functools.lru_cache(maxsize=4096)
def _parsed(normalized: str) -> tuple[Any, ...]:
    math_verify = _math_verify()
    # Wrapped in `$…$`: on bare strings math-verify misjudges `\frac 59` and even `\sqrt{53}` vs itself.
    return tuple(math_verify.parse(f"${normalized}$", parsing_timeout=_timeout_seconds()))


def _math_verify_equal(gold: str, pred: str) -> bool:
    math_verify = _math_verify()
    _QUIET.active.on = True
    try:
        gold_parsed, pred_parsed = list(_parsed(gold)), list(_parsed(pred))
        timeout = _timeout_seconds()
        # verify is not symmetric (`x=5` vs `5`); either direction counts.
        return bool(
            math_verify.verify(gold_parsed, pred_parsed, timeout_seconds=timeout)
            or math_verify.verify(pred_parsed, gold_parsed, timeout_seconds=timeout)
        )
    except (Exception, math_verify.errors.TimeoutException):  # TimeoutException is a BaseException
        return False
    finally:
        _QUIET.active.on = False


def answers_equivalent(a: str | None, b: str | None) -> bool:
    """Whether two final answers are the same (symmetric; None or an empty answer is never equivalent).

    Equal after `normalize_answer` -> True. A base numeral (`40_9`) on either side must match exactly, since
    math-verify reads `40_9` and `40_8` as 40. Otherwise math-verify decides; any error there -> False.
    Safe to call from worker threads (no signal-based timeout there).
    """
    if a is None or b is None:
        return False
    norm_a, norm_b = normalize_answer(a), normalize_answer(b)
    if not norm_a or not norm_b:
        return False
    if norm_a == norm_b:
        return True
    if _has_base_numeral(norm_a) or _has_base_numeral(norm_b):
        return _base_key(norm_a) == _base_key(norm_b)
    return _math_verify_equal(norm_a, norm_b)
