"""Limits on the JSON the toolkit reads from others (model answers, input lines, review requests), in one place.

Python's JSON decoders recurse once per nesting level, so `"[" * 100000` raises RecursionError instead of a
decoding error (json_repair recurses too). So a model's answer, which may be broken JSON bound for json_repair, is
scanned before any decoding (`too_deep`, a pass that never recurses); valid JSON (an input line, a review request)
is decoded and then measured (`loads_bounded`). Both refuse what is too deep with an ordinary, reportable error.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from injector.util.errors import InjectorError, InputError, UserError
from injector.util.safe_files import open_named_file

MAX_JSON_DEPTH = 64
"""Deepest nesting of `[` / `{` accepted in an answer, an input line or a review request (real ones use < 10)."""
MAX_ANSWER_BYTES = 2 * 1024 * 1024
"""Longest model answer accepted (UTF-8 bytes); longer is a `parse_error` (real answers are a few KB)."""
MAX_REVIEW_BODY_BYTES = 4 * 1024 * 1024
"""Largest review decision request (bytes); larger gets HTTP 400."""


MAX_INT_DIGITS = 640
"""Longest integer (digits) accepted in any JSON we read; Python refuses to print ints past 4,300 digits, and no
step number, count or score needs more than a few."""


class JsonRefused(InjectorError, ValueError):
    """JSON that is well-formed but past one of the limits above; `str()` says which, in words fit for a user."""


class TooDeep(JsonRefused):
    """JSON nested deeper than the limit."""

    def __init__(self, limit: int = MAX_JSON_DEPTH):
        super().__init__(f"nested more than {limit} levels deep (lists or objects inside each other)")


class NumberTooLong(JsonRefused):
    """An integer with more digits than `MAX_INT_DIGITS` (would crash printing, and means nothing as a count)."""

    def __init__(self, digits: int, limit: int = MAX_INT_DIGITS):
        super().__init__(f"holds an integer of {digits} digits (more than {limit})")


class TooLarge(JsonRefused):
    """A JSON text longer than the caller's byte limit."""

    def __init__(self, size: int, limit: int):
        super().__init__(f"is {size:,} bytes, more than the {limit:,} accepted")


def bounded_int(text: str) -> int:
    """The `parse_int` hook of every decoder here: refuses integers longer than `MAX_INT_DIGITS` digits."""
    digits = len(text) - (text[:1] == "-")
    if digits > MAX_INT_DIGITS:
        raise NumberTooLong(digits)
    return int(text)


def bounded_decoder(strict: bool = True) -> json.JSONDecoder:
    """A `json.JSONDecoder` whose integers are bounded (nesting is measured by the callers, see below)."""
    return json.JSONDecoder(strict=strict, parse_int=bounded_int)


_BOUNDED = bounded_decoder()


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


def loads_bounded(text: str | bytes, limit: int = MAX_JSON_DEPTH, max_bytes: int | None = None) -> Any:
    """`json.loads`, but past a limit raises a `JsonRefused` (`TooDeep`, `NumberTooLong`, `TooLarge`).

    Decodes first, then measures the text it decoded without a Python walk of the value (a walk cost as much as
    the decoding): bracket counts, and the bracket pass of `too_deep` only when the line could be too deep. The C
    decoder stops with RecursionError near 1000 levels; that is `TooDeep` too. Malformed JSON still raises
    `json.JSONDecodeError`, and bytes that are not UTF-8 `UnicodeDecodeError` (both ValueErrors, like every error
    here). A leading BOM is dropped, as the input readers do.
    """
    if max_bytes is not None and len(text) > max_bytes:
        raise TooLarge(len(text), max_bytes)
    if isinstance(text, (bytes, bytearray)):  # as json.loads decodes them (UTF-8, -16 or -32)
        text = bytes(text).decode(json.detect_encoding(text))
    try:
        value = _BOUNDED.decode(text.removeprefix("\ufeff"))
    except RecursionError:
        raise TooDeep(limit) from None
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


def jsonl_lines(path: Path, expected: str = "one JSON object per line") -> Iterator[tuple[int, Any]]:
    """(line number, value) for each non-blank line of a JSONL file someone gave us, read through `loads_bounded`.

    A line that is not JSON, not UTF-8 (decoded line by line, so the bad byte is reported with its line) or past a
    bound is an `InputError` naming FILE:LINE and `expected`; a file that cannot be opened, or that is no regular
    file (a FIFO or a device in a directory someone sent: a read that never returns or never ends), a `UserError`.
    """
    try:
        handle = open_named_file(path)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    with handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                value = loads_bounded(line.decode("utf-8"))
            except json.JSONDecodeError as exc:
                raise InputError(path, number, f"not valid JSON ({exc.msg}); {expected}") from None
            except UnicodeDecodeError:
                raise InputError(path, number, "not valid JSON (not UTF-8 text); save the file as UTF-8") from None
            except JsonRefused as exc:
                raise InputError(path, number, f"the line {exc}; {expected}") from None
            yield number, value
