"""Dollars as every table, card and message shows them: formatted once here."""
from __future__ import annotations


def money(value: float | None, unknown: str = "unknown") -> str:
    """`$0.0081` (four decimals: a unit often costs a fraction of a cent); `unknown` when no price was known."""
    return unknown if value is None else f"${value:.4f}"


def rounded_dollars(value: float | None) -> float | None:
    """Dollars for JSON: rounded to a millionth, so sums of prices do not print as 0.008145000000000001."""
    return None if value is None else round(float(value), 6)
