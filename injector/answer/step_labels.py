"""Step labels: a trajectory whose every step starts with the same label style ("Step k:", "k.") is shown to the
model without its labels, and its written steps get the labels back, renumbered 1..n.

Why: a model asked to insert a step into labelled steps has to choose between a duplicate label and renumbering
every later step (which changes steps it did not mean to change). Without labels it does neither; the records
carry labels on every step, an inserted one included. Unchanged steps then differ from the source only by their
label, which the alignment ignores (`align.normalize_step`). Partly labelled inputs are left alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from injector.model.trajectory import Trajectory

# "Step 3:" / "step 3." / "3." / "3:" at the very start, followed by whitespace (so "3.5 is" is no label).
_LABEL = re.compile(r"^(?P<word>[Ss]tep |STEP )?(?P<number>\d+)(?P<mark>[.:])(?P<gap>[ \t]+)(?=\S)")


@dataclass(frozen=True)
class StepLabels:
    """One label style: an optional word ("Step "), the number, a mark ("." or ":") and the space after it."""

    word: str
    mark: str
    gap: str

    def label(self, number: int) -> str:
        return f"{self.word}{number}{self.mark}{self.gap}"

    def relabel(self, steps: list[str]) -> list[str]:
        """The steps with any label of this style removed and labels 1..n put on every step."""
        return [self.label(k) + strip_label(step) for k, step in enumerate(steps, 1)]


def strip_label(step: str) -> str:
    match = _LABEL.match(step)
    return step[match.end():] if match else step


def detect_labels(steps: list[str]) -> StepLabels | None:
    """The label style every step shares, or None when any step has no label or another style."""
    styles, gaps = set(), []
    for step in steps:
        match = _LABEL.match(step)
        if match is None:
            return None
        styles.add((match.group("word") or "", match.group("mark")))
        gaps.append(match.group("gap"))
    if len(styles) != 1:
        return None
    word, mark = styles.pop()
    return StepLabels(word=word, mark=mark, gap=gaps[0])


def without_labels(trajectory: Trajectory) -> tuple[Trajectory, StepLabels | None]:
    """The trajectory as the model sees it (labels removed when every step has one), and the label style."""
    labels = detect_labels(list(trajectory.steps))
    if labels is None:
        return trajectory, None
    return trajectory.model_copy(update={"steps": [strip_label(step) for step in trajectory.steps]}), labels
