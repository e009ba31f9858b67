"""The word difference of a changed step, bounded: linear outside the changed middle, word by word only within caps.

A formula counts as one word, so a changed formula is marked whole and never split between a highlight and the text
around it (KaTeX could not typeset the halves).
"""
from __future__ import annotations

import difflib
import re
from html import escape
from typing import Any

# A formula (the delimiters the page's KaTeX typesets: $$..$$, \[..\], \(..\), $..$ with \$ inside), a run of
# spaces, a word that stops where a formula may start, or any one character: together they cover any text, so the
# tokens always join back to it.
_TOKENS = re.compile(r"\$\$.+?\$\$|\\\[.+?\\\]|\\\(.+?\\\)|\$(?:\\.|[^$\\])+?\$|\s+|(?:[^\s$\\]|\\[^\s\[(])+|\S",
                     re.DOTALL)



def e(text: Any) -> str:
    return escape(str(text), quote=True)


MAX_DIFF_TOKENS = 200
"""Tokens (words, spaces, formulas) of each side's changed middle that are diffed word by word: difflib without
autojunk is worse than quadratic (1,000 words took 10 s), so a longer middle is marked whole instead."""
PAGE_DIFF_BUDGET = 400_000
"""Token pairs (len(a) * len(b)) diffed word by word on one page, about 0.1 s; the steps after that are marked whole."""
MAX_TYPESET_CHARS = 20_000
"""A text block longer than this is not given to KaTeX (a 400 KB formula froze the tab for 52 s): shown as written."""


class DiffBudget:
    """The word-by-word diffing one page may still do, so a page of many long changed steps renders promptly."""

    def __init__(self, pairs: int = PAGE_DIFF_BUDGET):
        self.pairs = pairs
        self.whole = 0
        """How many differences were marked whole (over the caps) rather than word by word."""


def word_diff(old: str, new: str, budget: DiffBudget | None = None) -> tuple[str, str]:
    """Both texts as HTML, words only in `old` wrapped in <del>, words only in `new` in <ins>.

    Linear in the text outside the changed middle (the common first and last tokens are cut off first); the
    middle is diffed word by word only within `MAX_DIFF_TOKENS` and the page's `budget`, else marked whole."""
    a, b = _TOKENS.findall(old), _TOKENS.findall(new)
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle_a, middle_b = a[head:len(a) - tail], b[head:len(b) - tail]
    prefix, suffix = e("".join(a[:head])), e("".join(a[len(a) - tail:]))
    pairs = len(middle_a) * len(middle_b)
    budget = budget or DiffBudget()
    if max(len(middle_a), len(middle_b)) > MAX_DIFF_TOKENS or pairs > budget.pairs:
        budget.whole += 1
        gone, came = e("".join(middle_a)), e("".join(middle_b))
        return (prefix + (f"<del>{gone}</del>" if gone else "") + suffix,
                prefix + (f"<ins>{came}</ins>" if came else "") + suffix)
    budget.pairs -= pairs
    left, right = [prefix], [prefix]
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, middle_a, middle_b, autojunk=False).get_opcodes():
        gone, came = e("".join(middle_a[i1:i2])), e("".join(middle_b[j1:j2]))
        if op == "equal":
            left.append(gone)
            right.append(came)
            continue
        if gone:
            left.append(f"<del>{gone}</del>")
        if came:
            right.append(f"<ins>{came}</ins>")
    return "".join(left) + suffix, "".join(right) + suffix


def _tex(*texts: str) -> str:
    """` no-tex` for a text block too long to give KaTeX (the page shows it as written), else ""."""
    return " no-tex" if max(map(len, texts)) > MAX_TYPESET_CHARS else ""
