"""What is kept of an answer, and how much of one is read: the size cap every client applies (`bounded_http.py`
for the httpx-based ones) and the truncation of what records keep (`raw`, a judge's answers).

No httpx here: the engines import this at start-up.
"""
from __future__ import annotations

from injector.util.errors import InjectorError

DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024
"""Largest answer body read from a server (bytes); real chat answers and PRM scores are a few KB."""
MAX_KEPT_CHARS = 64 * 1024
"""Most characters of an answer a record keeps (`raw` of a reject, a judge's answers); the rest is dropped with a
marker (an answer that long never passes validation: `json_bounds.MAX_ANSWER_BYTES`)."""
TRUNCATION_MARKER = "\n[... truncated: {dropped:,} more characters not kept ...]"


class AnswerTooLarge(InjectorError):
    """A server's answer larger than the cap; it is refused, not read whole."""

    def __init__(self, size: int | None, limit: int):
        self.size, self.limit = size, limit
        told = f"{size:,} bytes" if size is not None else "more"
        super().__init__(f"the answer is {told}, more than the {limit:,} bytes accepted (max_answer_bytes)")


def capped_text(text: str | None, limit: int = MAX_KEPT_CHARS) -> str | None:
    """`text` cut to `limit` characters with a marker saying how much was dropped (what records keep of an answer)."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + TRUNCATION_MARKER.format(dropped=len(text) - limit)


def find_cause(exc: BaseException | None, kind: type[BaseException]) -> BaseException | None:
    """`exc` or the first exception of its cause / context chain that is a `kind` (SDKs wrap transport errors)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, kind):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None
