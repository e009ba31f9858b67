"""Checking one relation link: its exact values, whether it holds, and how the step's words qualify it."""
from __future__ import annotations

import functools
import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Literal

from pydantic import BaseModel

from injector.triage.step_audit.exact import NeedsSympy, NotClosed, base_numbers, closed_or_raise, fast_value, strip_units
from injector.triage.step_audit.relations import Link
from injector.triage.step_audit.worker import SympySides, SympyWorker

Status = Literal["true", "false", "uncertain"]
Uncertainty = Literal["hedged", "hypothetical", "rejected", "rounded", "angle_unit"]

APPROX_TRUE = Fraction(1, 100)
"""`\\approx` holds within 1 %."""
ROUNDED_BAND = Fraction(1, 10)
"""A false `=` within 10 % whose inputs are rounded decimals, or an `\\approx` between 1 and 10 %, is uncertain."""

HEDGE = re.compile(r"\b(?:approximately|approx\.?|about|roughly|around|nearly|almost|estimate[ds]?|close to)\b|≈|~",
                   re.IGNORECASE)
HYPOTHETICAL = re.compile(r"\b(?:if|suppose|assume|assuming|let's (?:try|check|see|test|say)|plug(?:ging)?|what if|would"
                          r"|guess|for example|e\.g\.|try)\b", re.IGNORECASE)
REJECTED_HERE = re.compile(r"\b(?:(?:is|are|was)\s+(?:\w+\s+)?not\s+(?:true|correct|right|"
                           r"equal|possible|valid|the case)|isn't (?:true|right|correct|equal)|which is (?:false|wrong|"
                           r"impossible|not)|(?:does not|doesn't) (?:work|hold|equal)|not equal|contradiction|impossible|"
                           r"false|wrong|incorrect|mistake|not\s+\w+\s+to)\b", re.IGNORECASE)
REJECTED_NEXT = re.compile(r"^\W*(?:wait|no\b|nope|oops|actually|hmm|hold on|that's (?:not|wrong|incorrect)|that is (?:not|"
                           r"wrong)|this is wrong|i (?:think i )?made a mistake|let me (?:re|double)|correction|not quite|"
                           r"that doesn't|that's a mistake|sorry|but that|that can't|that's impossible|that's not right)",
                           re.IGNORECASE)


class LinkCheck(BaseModel):
    """One relation of one step, checked."""

    step: int
    """1-based step number."""
    relation: str
    """The relation as written (one link of a chain)."""
    origin: Literal["math", "bare", "prose"]
    status: Status
    uncertainty: Uncertainty | None = None
    left_value: str
    right_value: str
    true_value: str
    """The left side's exact value (what the right side should have been, for an equality)."""


def _fraction(text: str) -> Fraction:
    return Fraction(Decimal(text))


@functools.lru_cache(maxsize=65536)
def _closed_side(side: str) -> str:
    side = base_numbers(strip_units(side)).strip()
    closed_or_raise(side)
    if not side:
        raise NotClosed("an empty side")
    return side


def side_values(link: Link, worker: SympyWorker) -> tuple[Fraction, Fraction, bool, str, str] | str:
    """(left, right, exactly equal, left as shown, right as shown), or why the link cannot be checked."""
    try:
        left, right = _closed_side(link.left), _closed_side(link.right)
    except NotClosed as exc:
        return str(exc)
    try:
        left_value, right_value = fast_value(left), fast_value(right)
        return left_value, right_value, left_value == right_value, _show(left_value), _show(right_value)
    except NotClosed as exc:
        return str(exc)
    except NeedsSympy:
        pass
    if link.origin != "math":
        return "not plain arithmetic"
    sides = _cached_sympy(worker, left, right)
    if isinstance(sides, str):
        return sides
    return _fraction(sides.left), _fraction(sides.right), sides.equal, sides.shown_left, sides.shown_right


_SYMPY_CACHE: dict[tuple[str, str], SympySides | str] = {}


def _cached_sympy(worker: SympyWorker, left: str, right: str) -> SympySides | str:
    key = (left, right)
    if key not in _SYMPY_CACHE:
        if len(_SYMPY_CACHE) > 65536:
            _SYMPY_CACHE.clear()
        _SYMPY_CACHE[key] = worker.sides(left, right)
    return _SYMPY_CACHE[key]


def _show(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    decimal = float(value)
    return f"{value.numerator}/{value.denominator} (≈ {decimal:.6g})"


def _relative(left: Fraction, right: Fraction) -> Fraction:
    scale = max(abs(left), abs(right))
    return abs(left - right) / scale if scale else Fraction(0)


def _rounding_of(written: str) -> Fraction:
    """Half a unit of the last decimal a number is written with (`0.333` -> 0.0005); 0 for an integer."""
    found = re.search(r"\.(\d+)\s*$", written.strip())
    return Fraction(1, 2 * 10 ** len(found.group(1))) if found else Fraction(0)


def holds(link: Link, left: Fraction, right: Fraction, equal: bool) -> tuple[Status, Uncertainty | None]:
    """Does the link hold on its values alone (before the step's words qualify it)?"""
    if link.modulus is not None:
        if left.denominator != 1 or right.denominator != 1 or not link.modulus.strip().isdigit():
            return "uncertain", "hypothetical"
        congruent = (left - right) % int(link.modulus) == 0
        return ("true" if congruent else "false") if link.op in ("equiv", "eq") else ("true" if not congruent else "false"), None
    if link.op == "equiv":
        return ("true", None) if equal else ("uncertain", "hypothetical")
    if link.op == "ne":
        return ("false" if equal else "true"), None
    if link.op in ("lt", "le", "gt", "ge"):
        result = {"lt": left < right, "le": left <= right or equal, "gt": left > right, "ge": left >= right or equal}
        return ("true" if result[link.op] else "false"), None
    if equal:
        return "true", None
    if link.remainder is not None and right.denominator == 1 and int(left) == right:
        return "true", None  # "100 ÷ 60 = 1 with a remainder of 40": a quotient, not a division
    near = abs(left - right) <= _rounding_of(link.right)
    relative = _relative(left, right)
    if link.op == "approx":
        if near or relative <= APPROX_TRUE:
            return "true", None
        return ("uncertain", "rounded") if relative <= ROUNDED_BAND else ("false", None)
    if near:
        return "uncertain", "rounded"
    rounded_inputs = "." in link.left or "." in link.right or not _rational_exact(left)
    if rounded_inputs and relative <= ROUNDED_BAND:
        return "uncertain", "rounded"
    return "false", None


def _rational_exact(value: Fraction) -> bool:
    """Fractions from the sympy path carry 40 digits; a huge denominator means an irrational approximated."""
    return value.denominator < 10 ** 30


def _in_degrees(left: Fraction, right: Fraction) -> bool:
    pi = Fraction(math.pi)
    return any(abs(a - b * pi / 180) <= abs(a) * Fraction(1, 10**9) for a, b in ((left, right), (right, left)) if a)


_TRIG = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc|arcsin|arccos|arctan)")


def check_link(link: Link, step: int, step_text: str, next_step: str | None, worker: SympyWorker) -> LinkCheck | str:
    """Check one link; a string says why it was skipped (free variables, unreadable, timed out)."""
    values = side_values(link, worker)
    if isinstance(values, str):
        return values
    left, right, equal, shown_left, shown_right = values
    status, uncertainty = holds(link, left, right, equal)
    if status == "false":
        if _TRIG.search(link.left + link.right) and "circ" not in link.left + link.right:
            # degrees or radians: the step does not say; `\arcsin(1/2) = 30` is true read in degrees
            status, uncertainty = ("true", None) if _in_degrees(left, right) else ("uncertain", "angle_unit")
        elif link.after.lstrip().startswith("?") or REJECTED_HERE.search(step_text):
            status, uncertainty = "uncertain", "hypothetical"
        elif HYPOTHETICAL.search(step_text):
            status, uncertainty = "uncertain", "hypothetical"
        elif HEDGE.search(step_text):
            status, uncertainty = "uncertain", "hedged"
        elif next_step is not None and REJECTED_NEXT.search(next_step):
            status, uncertainty = "uncertain", "rejected"
    return LinkCheck(step=step, relation=link.text, origin=link.origin, status=status,  # type: ignore[arg-type]
                     uncertainty=uncertainty, left_value=shown_left, right_value=shown_right, true_value=shown_left)
