"""Finding the closed relations a step asserts: inside math delimiters, as bare arithmetic, or in simple prose.

A relation is one *link* `left OP right`: a chain `a = b = c` gives the links `a = b` and `b = c`. Whether a
link is closed (no free variables) is decided when it is evaluated (`exact.py`); here it is only found.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

Origin = str  # "math" | "bare" | "prose"

# `\$` is a dollar sign, not a delimiter; it is masked before the delimiters are found.
_DOLLAR = "\x00"
MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.DOTALL)
# Relation operators, longest first so `\leq` is not read as `\le` + `q`.
RELATION_OPS = {
    "\\approx": "approx", "\\equiv": "equiv", "\\neq": "ne", "\\leq": "le", "\\geq": "ge", "\\ne": "ne",
    "\\le": "le", "\\ge": "ge", "\\lt": "lt", "\\gt": "gt", "≈": "approx", "≠": "ne", "≤": "le", "≥": "ge",
    "<": "lt", ">": "gt", "=": "eq",
}
_OP = re.compile("|".join(re.escape(op) + (r"(?![a-zA-Z])" if op[0] == "\\" else "")
                          for op in sorted(RELATION_OPS, key=len, reverse=True)))
# Where one statement ends and the next begins inside one math span.
_STATEMENT_BREAK = re.compile(r"\\quad|\\qquad|\\implies|\\Rightarrow|\\rightarrow|\\Longrightarrow|\\to(?![a-z])"
                              r"|\\iff|\\text\{[^{}]*[a-zA-Z]{2,}[^{}]*\}|\\mbox\{[^{}]*\}|\\textrm\{[^{}]*\}|;|(?<!\\),(?!\d{3})"
                              r"|\\(?:and|or)\b|\\begin\{[a-z*]+\}|\\end\{[a-z*]+\}")
# Digit grouping: `1,000`, `1{,}000`, `1\,000`, `1\!000`, `1\ 000` all mean 1000.
_GROUPING = re.compile(r"(?<![\d.])(\d{1,3})((?:(?:,|\{,\}|\\,|\\!|\\ )\d{3})+)(?![\d])")
_PMOD = re.compile(r"\\pmod\s*\{([^{}]*)\}|\\pmod\s*(\d+)|\(\s*\\mod\s*(\d+)\s*\)|\\mod\s*\{?(\d+)\}?")

_NUM = r"\d+(?:\.\d+)?"
# Bare arithmetic outside math: a run of numbers, operators and relations ("60 * 7 = 420", "4/5 * 1/2 = 4/10 =
# 2/5"), starting neither inside a word nor just after an operator (so `8n+2=10` gives nothing).
BARE_RUN = re.compile(r"(?<![\w.$\\^+\-*/×÷·=])(?<![+\-*/×÷·=^] )[\d(][\d.\s+\-*/×÷^()·=≈≠≤≥<>]*[\d)]")
_BARE_OPS = {"=": "eq", "≈": "approx", "≠": "ne", "≤": "le", "≥": "ge", "<": "lt", ">": "gt"}
_BARE_SPLIT = re.compile(r"\s*([=≈≠≤≥<>])\s*")
_ARITHMETIC = re.compile(r"[\d)]\s*[+\-*/×÷^·]\s*[\d(]")
PROSE_OPS = {"divided by": "/", "times": "*", "multiplied by": "*", "plus": "+", "minus": "-"}
PROSE = re.compile(r"(?<![\w.])(" + _NUM + r")\s+(divided by|times|multiplied by|plus|minus)\s+(" + _NUM +
                   r")\s+(?:is|equals|gives|gives us|makes)\s+(" + _NUM + r")(?![\d.]*\d)", re.IGNORECASE)
REMAINDER = re.compile(r"^[^.;]{0,25}?\b(?:with\s+(?:a\s+)?remainder(?:\s+of)?|remainder|R)\s*(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Link:
    """One relation `left OP right` as written in a step, with what surrounds it (for the context rules)."""

    left: str
    op: str
    right: str
    origin: Origin
    text: str
    """The link as the step writes it (`4 \\cdot 2.75 = 11`)."""
    after: str
    """The step's text just after the relation (for "with a remainder of 40", "is clearly not true")."""
    modulus: str | None = None
    remainder: int | None = None


def ungroup_digits(text: str) -> str:
    """`1,000` / `1{,}000` / `1\\,000` -> `1000`."""
    return _GROUPING.sub(lambda m: m.group(1) + re.sub(r"\D", "", m.group(2)), text)


def _top_level_split(piece: str) -> list[tuple[str, str]]:
    """`a = b < c` -> [("a", ""), ("b", "eq"), ("c", "lt")]: the terms and the operator before each, at brace
    depth 0 only."""
    terms: list[tuple[str, str]] = []
    depth, start, op_before = 0, 0, ""
    position = 0
    while position < len(piece):
        char = piece[position]
        if char in "{([":
            depth += 1
        elif char in "})]":
            depth = max(0, depth - 1)
        elif depth == 0:
            match = _OP.match(piece, position)
            if match:
                terms.append((piece[start:position], op_before))
                op_before = RELATION_OPS[match.group(0)]
                start = position = match.end()
                continue
        position += 1
    terms.append((piece[start:], op_before))
    return terms


def _links_of(piece: str, origin: Origin, after: str) -> list[Link]:
    modulus = None
    found = _PMOD.search(piece)
    if found:
        modulus = next(group for group in found.groups() if group is not None)
        piece = piece[:found.start()] + piece[found.end():]
    terms = _top_level_split(piece)
    links = []
    for (left, _), (right, op) in zip(terms, terms[1:]):
        left, right = left.strip(), right.strip()
        if left and right and op:
            links.append(Link(left, op, right, origin, f"{left} {_SYMBOL[op]} {right}", after, modulus))
    return links


_SYMBOL = {"eq": "=", "approx": "\\approx", "ne": "\\neq", "le": "\\le", "ge": "\\ge", "lt": "<", "gt": ">",
           "equiv": "\\equiv"}


def _with_remainder(link: Link) -> Link:
    found = REMAINDER.match(link.after)
    if not found or link.op != "eq":
        return link
    return Link(link.left, link.op, link.right, link.origin, link.text, link.after, link.modulus, int(found.group(1)))


def find_links(step: str) -> list[Link]:
    """Every relation link written in one step, in order of appearance within each kind."""
    masked = step.replace("\\$", _DOLLAR)
    links: list[Link] = []
    outside = []
    last = 0
    for span in MATH_SPAN.finditer(masked):
        outside.append(masked[last:span.start()])
        last = span.end()
        body = next(group for group in span.groups() if group is not None)
        after = masked[span.end():span.end() + 80]
        body = ungroup_digits(body.replace(_DOLLAR, "").replace("&", " "))
        # `\\` ends a line only in an environment (`aligned`); inline it is spacing (`r\\ \#\\ 0`)
        body = re.sub(r"\\\\", " ; " if "\\begin" in body else " ", body)
        for piece in _STATEMENT_BREAK.split(body):
            links.extend(_with_remainder(link) for link in _links_of(piece, "math", after))
    outside.append(masked[last:])
    plain = ungroup_digits(" ".join(outside).replace(_DOLLAR, ""))
    links.extend(_bare_links(plain))
    return links


def _bare_links(plain: str) -> list[Link]:
    links = []
    for run in BARE_RUN.finditer(plain):
        parts = _BARE_SPLIT.split(run.group(0).strip())
        if len(parts) < 3 or not any(_ARITHMETIC.search(term) for term in parts[::2]):
            continue
        if re.match(r"[a-zA-Z(^_]", plain[run.end():run.end() + 1]):
            parts = parts[:-2]  # "= 10x": the last term runs into a variable
        after = plain[run.end():run.end() + 80]
        for index in range(0, len(parts) - 2, 2):
            left, symbol, right = parts[index].strip(), parts[index + 1], parts[index + 2].strip()
            if left and right and left.count("(") == left.count(")") and right.count("(") == right.count(")"):
                links.append(_with_remainder(Link(left, _BARE_OPS[symbol], right, "bare", f"{left} {symbol} {right}",
                                                  after)))
    for found in PROSE.finditer(plain):
        left = f"{found.group(1)} {PROSE_OPS[found.group(2).lower()]} {found.group(3)}"
        after = plain[found.end():found.end() + 80]
        links.append(_with_remainder(Link(left, "eq", found.group(4), "prose", found.group(0), after)))
    return links
