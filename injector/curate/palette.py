"""The one colour scheme of every plot (`inject stats --plots`, `inject eval` reports): a status or a stage has the
same colour wherever it appears, and colours are never handed out in order of appearance."""
from __future__ import annotations

STATUS_COLOURS = {
    "accepted": "#2ca02c",  # green: a reviewer (or the consensus) accepted it
    "rejected_by_reviewer": "#d62728",  # red
    "unreviewed": "#9e9e9e",  # grey: nobody decided yet
    "rejected_by_validation": "#ff7f0e",  # orange: the toolkit's checks refused it
    "in_split": "#1f77b4",  # blue: a row of a split or a PRMBench file, nothing else known
    "correct_control": "#8c564b",  # brown: a source solution added as a correct control
}
STAGE_COLOURS = {
    "units": "#c7c7c7",
    "valid": STATUS_COLOURS["in_split"],
    "verified": "#17becf",
    "reviewed": "#9467bd",
    "accepted": STATUS_COLOURS["accepted"],
}
NEUTRAL = "#37474f"
"""Bars that stand for no status (histograms, per-category scores)."""
HEATMAP = "Oranges"
"""Counts of rejects: the colour map runs towards `rejected_by_validation`'s orange."""
