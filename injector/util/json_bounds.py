"""Limits on the JSON the toolkit reads from others (model answers, input lines, review requests), in one place.

Python's JSON decoders recurse once per nesting level, so `"[" * 100000` raises RecursionError instead of a
decoding error (json_repair recurses too). So a model's answer, which may be broken JSON bound for json_repair, is
scanned before any decoding (`too_deep`, a pass that never recurses); valid JSON (an input line, a review request)
is decoded and then measured (`loads_bounded`). Both refuse what is too deep with an ordinary, reportable error.
"""
from __future__ import annotations

import json
import re
from typing import Any

from injector.util.errors import InjectorError

MAX_JSON_DEPTH = 64
"""Deepest nesting of `[` / `{` accepted in an answer, an input line or a review request (real ones use < 10)."""
MAX_ANSWER_BYTES = 2 * 1024 * 1024
"""Longest model answer accepted (UTF-8 bytes); longer is a `parse_error` (real answers are a few KB)."""
MAX_REVIEW_BODY_BYTES = 4 * 1024 * 1024
"""Largest review decision request (bytes); larger gets HTTP 400."""


class TooDeep(InjectorError, ValueError):
    """JSON nested deeper than the limit; `str()` says so in words fit for a user."""

    def __init__(self, limit: int = MAX_JSON_DEPTH):
        super().__init__(f"nested more than {limit} levels deep (lists or objects inside each other)")


# A closed JSON string (unrolled loop: fast on long strings), whose brackets are text, not structure. A quote that
# never closes is only a character: the brackets after it still count.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_ONE_KIND = str.maketrans("{}", "[]")
# Outside its strings, valid JSON holds brackets and only these (json.loads also reads NaN and Infinity).
_STRUCTURE_ONLY = str.maketrans("{}", "[]", " \t\r\n:,0123456789+-.eE" + "truefalsnullNaNInfinity")


def too_deep(text: str, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the `[` / `{` outside JSON strings nest deeper than `limit`, or more than `limit` are left open.

    Never recurses and stays linear-ish on long text: strings and everything but brackets are dropped by the
    regex engine, then each pass removes the innermost `[]` pairs, so `limit` passes empty any nesting within it.
    What remains after that is either a pair nested deeper, or unmatched brackets (`]]][[[`): a decoder (or
    json_repair's guesswork) would descend into every opener left open, so those count as depth too.
    """
    if text.count("[") + text.count("{") <= limit:
        return False  # cannot nest deeper than the number of openers: a short answer costs two counts
    return _brackets_too_deep(_NOT_BRACKET.sub("", _STRING.sub("", text)).translate(_ONE_KIND), limit)


def _brackets_too_deep(brackets: str, limit: int) -> bool:
    """`too_deep` of a string of `[` and `]` alone."""
    for _ in range(limit):
        shorter = brackets.replace("[]", "")
        if len(shorter) == len(brackets):
            break
        brackets = shorter
    return "[]" in brackets or brackets.count("[") > limit


def too_long(text: str, limit: int = MAX_ANSWER_BYTES) -> bool:
    """Whether `text` is longer than `limit` bytes in UTF-8 (encoded only when its length leaves a doubt)."""
    if len(text) > limit:
        return True
    return len(text) * 4 > limit and len(text.encode("utf-8", "surrogatepass")) > limit


def nests_deeper(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether decoded JSON nests lists / objects deeper than `limit` (iterative; stops at the first too deep)."""
    if not isinstance(value, (list, dict)):
        return False
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
    return False


def loads_bounded(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads`, but nesting deeper than `limit` raises `TooDeep` instead of decoding (or RecursionError).

    Decodes first, then measures the text it decoded without a Python walk of the value (a walk cost as much as
    the decoding): bracket counts, and the bracket pass of `too_deep` only when the line could be too deep. The C decoder stops with RecursionError near 1000 levels; that is `TooDeep` too.
    """
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(limit) from None
    if isinstance(text, bytes):  # decoded as json.loads decoded it (UTF-8, -16 or -32)
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    if _valid_json_too_deep(text, limit):
        raise TooDeep(limit)
    return value


def _valid_json_too_deep(text: str, limit: int) -> bool:
    """`too_deep` for text that decoded as JSON, in C but for the bracket pass: its depth is at most the count of
    `[` / `{` outside its strings, and its strings are every other piece between quotes once escaped quotes are
    gone (escaped backslashes first: a run of backslashes in valid JSON pairs up from its start)."""
    if text.count("[") + text.count("{") <= limit:
        return False
    if '\\"' in text:
        text = text.replace("\\\\", "").replace('\\"', "")
    outside = "".join(text.split('"')[::2])
    if outside.count("[") + outside.count("{") <= limit:
        return False  # the usual case of a long line: its brackets are LaTeX inside strings
    brackets = outside.translate(_STRUCTURE_ONLY)
    if brackets.count("[") + brackets.count("]") < len(brackets):  # cannot happen in valid JSON; be sure anyway
        return too_deep(outside, limit)
    return _brackets_too_deep(brackets, limit)
