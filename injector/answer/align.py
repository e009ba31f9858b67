"""Step alignment: which modified steps match, replace or insert original steps, and which originals were deleted.

Validation derives the changed steps from this alignment (never from the model's declaration); edit mode, the
review app and the worked examples use the same alignment so they all agree on what changed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_NUMBERING = re.compile(r"^\s*(?:step\s+\d+\s*[.:]|\d+\s*[.:)])(?=\s)", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s+")


def normalize_step(text: str) -> str:
    """Drop a leading `Step N.`/`N.`/`N:`/`N)` followed by whitespace, collapse whitespace, strip trailing periods."""
    text = _NUMBERING.sub("", text, count=1)
    text = _WHITESPACE.sub(" ", text).strip()
    return text.rstrip(".").rstrip()


def normalize_question(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


@dataclass
class Alignment:
    """How modified steps relate to original steps (all indices 0-based)."""

    matched: dict[int, int] = field(default_factory=dict)
    """modified index -> original index, for steps unchanged after normalization."""
    replaced: dict[int, int] = field(default_factory=dict)
    """modified index -> original index it replaces."""
    inserted: list[int] = field(default_factory=list)
    deleted: list[int] = field(default_factory=list)
    """original indices with no counterpart in the modified steps."""

    @property
    def changed(self) -> list[int]:
        return sorted([*self.replaced, *self.inserted])


def align_steps(original: list[str], modified: list[str]) -> Alignment:
    """Align normalized steps by their longest common subsequence, made unique by a greedy walk.

    Suffix LCS lengths first; then from the first steps: equal steps match; otherwise skip the original step if
    that keeps the LCS length, else skip the modified step. Inside each gap between matches, unmatched original
    steps pair left to right with the changed steps (replaced); surplus originals are deleted, surplus modified
    steps inserted.
    """
    a = [normalize_step(s) for s in original]
    b = [normalize_step(s) for s in modified]
    n, m = len(a), len(b)
    lcs = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            lcs[i][j] = lcs[i + 1][j + 1] + 1 if a[i] == b[j] else max(lcs[i + 1][j], lcs[i][j + 1])

    alignment = Alignment()
    gap_original: list[int] = []
    gap_modified: list[int] = []

    def close_gap() -> None:
        for k, j in enumerate(gap_modified):
            if k < len(gap_original):
                alignment.replaced[j] = gap_original[k]
            else:
                alignment.inserted.append(j)
        alignment.deleted.extend(gap_original[len(gap_modified):])
        gap_original.clear()
        gap_modified.clear()

    i = j = 0
    while i < n or j < m:
        if i < n and j < m and a[i] == b[j]:
            close_gap()
            alignment.matched[j] = i
            i, j = i + 1, j + 1
        elif i < n and (j == m or lcs[i + 1][j] == lcs[i][j]):
            gap_original.append(i)
            i += 1
        else:
            gap_modified.append(j)
            j += 1
    close_gap()
    return alignment
