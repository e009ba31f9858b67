"""What a provider's refusal says, read the same way whichever client carried it (litellm or the openai SDK):
the response headers of a 429 (Retry-After, the spent rate window, its reset time)."""
from __future__ import annotations

import math
import re
from typing import Any


def headers_of(exc: Exception) -> Any:
    """The provider's response headers carried by an exception (httpx's, case-insensitive), or {}."""
    return getattr(getattr(exc, "response", None), "headers", None) or {}


def spent_window(exc: Exception) -> str | None:
    """The rate window a 429 says is spent: "requests" or "tokens" when its `x-ratelimit-remaining-*` is 0."""
    headers = headers_of(exc)
    for window in ("requests", "tokens"):
        if str(headers.get(f"x-ratelimit-remaining-{window}", "")).strip() == "0":
            return window
    return None


def duration_seconds(value: str | None) -> float | None:
    """A reset time as providers write it (`6m0s`, `1.5s`, `20ms`, `1h2m`, or bare seconds) in seconds; None when
    absent or unreadable."""
    text = (value or "").strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(number) * scale[unit] for number, unit in parts)


def retry_after(exc: Exception) -> float | None:
    """Seconds the provider's `Retry-After` asks for; None when absent, unreadable, negative or not finite."""
    headers = headers_of(exc)
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None  # not inf, nan


def rate_limit_wait(exc: Exception, retry_after_seconds: float | None) -> tuple[float | None, bool]:
    """How long a 429 asks the run to wait (Retry-After, else the spent window's reset time; None: unknown), and
    whether it says a rate window is spent."""
    spent = spent_window(exc)
    wait = retry_after_seconds
    if wait is None and spent:
        wait = duration_seconds(headers_of(exc).get(f"x-ratelimit-reset-{spent}"))
    return wait, spent is not None
