"""Gold items: candidates with known labels mixed into every reviewer's queue (`inject review --gold FILE`)."""
from __future__ import annotations

from pathlib import Path

from injector.records.directory import Candidate, scan_records
from injector.curate.review.assign import ReviewPlan

GOLD_FILE = "review-gold.jsonl"


def gold_entries(run_path: Path, number: int, plan: ReviewPlan) -> list:
    """The session entries of the run's gold items (none without `--gold`)."""
    from injector.curate.review.session import Entry

    if not plan.gold or not (run_path / GOLD_FILE).is_file():
        return []
    return [Entry(f"{number}/{candidate.id}", number, candidate.id, candidate.category, offset, GOLD_FILE)
            for _, offset, candidate in scan_records(run_path / GOLD_FILE, Candidate, strict=True)
            if candidate.id in plan.gold]
