"""`loads_bounded` measures the text it decoded (bracket counts outside strings) instead of walking the value: it
refuses exactly what the walk of the decoded value refuses, whatever the strings hold (brackets, escaped quotes,
backslashes) and whatever the encoding of bytes."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from injector.util.json_bounds import TooDeep, loads_bounded, nests_deeper

# Strings full of what could fool a scan of the text: brackets, quotes, backslashes.
TEXT = st.text(alphabet='[]{}"\\,: ab\u00e9\u0122', max_size=12)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                    max_leaves=40)


def refused(text: str | bytes, limit: int) -> bool:
    try:
        loads_bounded(text, limit)
    except TooDeep:
        return True
    return False


@settings(max_examples=300, deadline=None)
@given(JSON, st.integers(1, 6), st.booleans())
def test_the_text_check_refuses_what_the_walk_refuses(value, limit, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert refused(text, limit) == nests_deeper(value, limit)
    assert refused(json.dumps(value, separators=(",", ":"), indent=None), limit) == nests_deeper(value, limit)


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-16-le", "utf-32"])
def test_bytes_in_any_json_encoding_are_measured_as_decoded(encoding):
    # U+0122 is the bytes 22 01 in UTF-16-LE: a quote, were the bytes read as UTF-8.
    shallow = json.dumps({"a": "\u0122[[[[[[[[" * 5, "b": [[1]]}, ensure_ascii=False)
    deep = json.dumps({"a": "\u0122\\\"", "b": [[[[[[1]]]]]]}, ensure_ascii=False)
    assert loads_bounded(shallow.encode(encoding), limit=3)["b"] == [[1]]
    with pytest.raises(TooDeep):
        loads_bounded(deep.encode(encoding), limit=3)


def test_brackets_in_strings_with_escaped_quotes_are_text():
    value = {"s": '\\"' + "[" * 200 + '"' + "{" * 200, "t": [["\\\\"]]}
    assert loads_bounded(json.dumps(value), limit=3) == value
    with pytest.raises(TooDeep):
        loads_bounded(json.dumps({"s": '\\"' + "[" * 200, "t": [[[["x"]]]]}), limit=3)
