"""A few top-level string fields of each line of a JSON-lines file (the review queue index's ids, categories and
verdicts), read without decoding the line when it is written as `inject run` writes it: each key found once, as a
key, its value matched on the raw bytes; any other line is decoded (bounded: `loads_bounded`), and a line that is
no JSON object with those fields is skipped and said (FILE:LINE), never raised."""
from __future__ import annotations

import json
import logging
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterator

from injector.records.models import CANDIDATES_FILE
from injector.util.errors import UserError
from injector.util.json_bounds import JsonRefused, loads_bounded
from injector.util.safe_files import MAX_SIDE_FILE_BYTES, open_read

log = logging.getLogger("injector")

_STRING_VALUE = re.compile(rb'\s*:\s*"([^"\\]*(?:\\.[^"\\]*)*)"')
"""A key's string value, its text between the quotes (unrolled: runs of plain bytes between escapes, matched
fast)."""


def scan_fields(path: Path, names: tuple[bytes, ...]) -> Iterator[tuple[int, int, tuple[str, ...], bytes]]:
    """(line number, byte offset, the text of the top-level keys `names`, the line) of each line of `path` that is
    a JSON object with them; any other line is skipped and said (FILE:LINE)."""
    if not path.exists():
        return
    try:
        handle = open_read(path, None if path.name == CANDIDATES_FILE else MAX_SIDE_FILE_BYTES)
    except OSError as exc:
        raise UserError(f"{path}: cannot read it ({exc.strerror}); check it is a file you may read") from None
    offset, together = 0, _adjacent(names)
    with handle:
        for number, raw in enumerate(handle, 1):
            start, offset = offset, offset + len(raw)
            fields: tuple[str, ...] | str | None = quick_fields(raw, names, together)
            if fields is None:
                if not raw.strip():
                    continue
                fields = _decoded_fields(raw, names)
            if isinstance(fields, str):
                log.warning("%s:%d: skipped: %s", path, number, fields)
                continue
            yield number, start, fields, raw


def quick_fields(raw: bytes, names: tuple[bytes, ...], together: re.Pattern[bytes] | None = None
                  ) -> tuple[str, ...] | None:
    """The keys' string values without decoding the line, when each key occurs once in it, as a key: in JSON a
    quote inside a string is escaped, so `"id"` after `{` or `,` can only be a key (of some object: a second
    occurrence, or a line that does not end its object, goes through the decoder instead). `together`:
    `_adjacent(names)`, made once by the caller."""
    if not (raw.endswith(b"}\n") or raw.rstrip().endswith(b"}")):
        return None
    first = raw.find(names[0])
    found = (together or _adjacent(names)).match(raw, first) if first >= 0 else None
    if found is not None and (first > 0 and raw[first - 1] in b"{," or _starts_a_key(raw, first)) \
            and _once(raw, names, found):
        tokens: tuple[bytes, ...] | None = found.groups()  # the keys side by side, as `inject run` writes them
    else:
        tokens = _apart(raw, names)
    try:
        texts = tuple(map(bytes.decode, tokens)) if tokens is not None else None  # strict UTF-8
    except ValueError:  # UnicodeDecodeError is one
        return None
    if texts is None or "\\" not in "".join(texts):
        return texts
    try:
        return tuple([json.loads(f'"{text}"') for text in texts])  # escapes (ASCII): the decoder's reading
    except ValueError:
        return None


def _apart(raw: bytes, names: tuple[bytes, ...]) -> tuple[bytes, ...] | None:
    """Each key's string value (unquoted, as written), each key found once, as a key; else None."""
    tokens = []
    for name in names:
        at = raw.find(name)
        if raw.count(name) != 1 or not _starts_a_key(raw, at):
            return None
        value = _STRING_VALUE.match(raw, at + len(name))
        if value is None:
            return None
        tokens.append(value.group(1))
    return tuple(tokens)


def _once(raw: bytes, names: tuple[bytes, ...], found: re.Match[bytes]) -> bool:
    """Whether each key occurs in `raw` nowhere but in `found`, the match of the keys side by side (the first key
    was found first: only the text after the match can hold it again; the others may be before it)."""
    start, end = found.span()
    if raw.find(names[0], end) >= 0:
        return False
    for name in names[1:]:
        if raw.find(name, 0, start) >= 0 or raw.find(name, end) >= 0:
            return False
    return True


def _starts_a_key(raw: bytes, at: int) -> bool:
    """Whether the text at `at` follows `{` or `,` (blanks between allowed)."""
    before = at - 1
    while before >= 0 and raw[before] in b" \t\r\n":
        before -= 1
    return raw[before:before + 1] in (b"{", b",")


@lru_cache(maxsize=8)
def _adjacent(names: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """The keys side by side, as `inject run` writes them (matched where the first key is found: `find` is
    faster than a regex's search for its literal start)."""
    return re.compile(rb"\s*,\s*".join(re.escape(name) + _STRING_VALUE.pattern for name in names))


def _decoded_fields(raw: bytes, names: tuple[bytes, ...]) -> tuple[str, ...] | str:
    """The keys' values from the decoded line, or what is wrong with it."""
    try:
        value = loads_bounded(raw.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        return "a torn line (an interrupted write) or not JSON"
    except JsonRefused as exc:
        return f"not a record ({exc})"
    keys = [name.decode().strip('"') for name in names]
    if not isinstance(value, dict) or not all(isinstance(value.get(key), str) for key in keys):
        return f"not a record (no text {' and '.join(keys)})"
    return tuple(value[key] for key in keys)
