"""`BuildReport`: what a build wrote and left out, the numbers its card reports."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from injector.curate.row_spill import RowKey


@dataclass
class BuildReport:
    """What a build wrote and the numbers its card reports."""

    out_dir: Path
    splits: dict[str, int] = field(default_factory=dict)
    rows: list[RowKey] = field(default_factory=list)
    """The split's rows, a key each (their records are in the split's files)."""
    candidates_seen: int = 0
    rejected_by_reviewer: int = 0
    unreviewed_left_out: int = 0
    reviewer_reasons: Counter = field(default_factory=Counter)
    reject_codes: Counter = field(default_factory=Counter)
    run_rejects: int = 0
    required: tuple[str, ...] = ()
    """`require`: the verdicts a candidate needed to enter."""
    left_out_by_verdict: Counter = field(default_factory=Counter)
    """(category, verdict or `unverified`) -> candidates `require` left out."""
    verdicts: Counter = field(default_factory=Counter)
    """(category, verdict or `unverified`) -> rows of the split, when a run was verified."""
    reviews: dict[str, Any] | None = None
    """Reviewer agreement and the judge's calibration of the runs (`calibration.review_figures`), for the card."""
    funnel: dict[str, Any] | None = None
    """The runs' funnel and costs (`funnel.Funnel`, dumped), for the card."""
    dropped: list = field(default_factory=list)
    """`dedup.Dropped` per row `decontaminate` or `dedup` left out, in that order."""
    dedup_threshold: float | None = None
    benchmark_files: list[str] = field(default_factory=list)
    benchmark_questions: int = 0
    hard_for: Any = None
    """`hard_for.HardFilter`: what `hard_for` kept and dropped, and the ranking change."""
    cue_sample: int | None = None
    """Rows per category the card's cue probe read at most (None: no cue figures)."""
    require_audit_clean: bool = False
    left_out_by_audit: Counter = field(default_factory=Counter)
    """category -> candidates `require_audit_clean` left out (a step-audit flag)."""
    audit_flagged: Counter = field(default_factory=Counter)
    """category -> rows of the split with a step-audit flag (audited rows in `audited`)."""
    audited: Counter = field(default_factory=Counter)
    figures: Any = None
    """`card_figures.CardFigures`: what the card reports of the rows, gathered as they were read back."""
    runs: list[Any] = field(default_factory=list)
    """`reproduce.RunOrigin` per run directory: the command that made it, its version and what it spent."""
