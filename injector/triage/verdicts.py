"""The triage verdicts `inject verify` writes to `RUN/verify.jsonl`, and how other stages read them.

One line per candidate, keyed by the candidate's `id`. The review app sorts and filters by `verdict`, and
`inject build --require` keeps only candidates with the verdicts named; both read through `read_verdicts`.
A later line for the same id (a re-verify) replaces an earlier one.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from injector.records.jsonl import problem_of, read_jsonl_numbered

log = logging.getLogger(__name__)

VERIFY_FILE = "verify.jsonl"
VERIFY_SUMMARY_FILE = "verify-summary.json"

Verdict = Literal["missed", "original_flagged", "disputed", "unparseable", "flagged", "early", "late", "confirmed"]
VERDICTS: tuple[str, ...] = ("missed", "original_flagged", "disputed", "unparseable", "flagged", "early", "late",
                             "confirmed")
"""Every verdict, in the order a reviewer should look at them: the likeliest bad items first, `confirmed` last."""

CritiqueKind = Literal["error", "redundancy", "circular", "alternative"]
"""What the blind judge was asked for: the earliest wrong step (soundness and sensitivity categories), the
earliest removable step (redundancy), the earliest step assuming what it shows (circular logic), or the earliest
wrong step of an alternative solution (multi_solution)."""


class JudgeAnswer(BaseModel):
    """One critique's parsed answer: `first_error_step` is 1-based, -1 for "none", None when unparseable."""

    model_config = ConfigDict(extra="allow")

    first_error_step: int | None
    reason: str = ""


class VerifyRecord(BaseModel):
    """One line of `verify.jsonl`."""

    model_config = ConfigDict(extra="allow")

    id: str
    """The candidate's `id` (as in candidates.jsonl)."""
    category: str
    trajectory_id: str
    verdict: Verdict
    kind: CritiqueKind
    declared_first_error: int | None
    """The candidate's first declared error step (1-based), None for multi_solution."""
    judge_modified: JudgeAnswer | None
    """The majority answer on the modified solution (None if it could not be had)."""
    judge_original: JudgeAnswer | None
    """The answer on the original solution, for the same critique kind (None for multi_solution)."""
    votes: list[int | None] = []
    """Every sampled `first_error_step` on the modified solution (None = unparseable)."""
    mc: dict[str, Any] | None = None
    """Monte Carlo rollout scores `{"n", "before", "through"}` when `--rollouts` ran for this candidate."""
    usage: dict[str, Any] = {}

    @property
    def reason(self) -> str:
        """The judge's reason on the modified solution, for display."""
        return self.judge_modified.reason if self.judge_modified else ""


def read_verdicts(run_dir: Path) -> dict[str, VerifyRecord]:
    """Candidate id -> its latest verify record; empty when the run was never verified. A line that is not a
    verify record is skipped with a FILE:LINE warning (a received run directory may hold anything)."""
    path = Path(run_dir) / VERIFY_FILE
    verdicts: dict[str, VerifyRecord] = {}
    for number, value in read_jsonl_numbered(path):
        try:
            if not isinstance(value, dict):
                raise ValueError("a JSON object expected")
            record = VerifyRecord.model_validate(value)
        except ValueError as exc:
            problem = problem_of(exc) if isinstance(exc, ValidationError) else str(exc)
            log.warning("%s:%d: not a verify record (%s); skipped", path, number, problem)
            continue
        verdicts[record.id] = record
    return verdicts


def verdict_rank(verdict: str | None) -> int:
    """Sort key: the order of `VERDICTS`, unverified candidates after all verified ones."""
    return VERDICTS.index(verdict) if verdict in VERDICTS else len(VERDICTS)
