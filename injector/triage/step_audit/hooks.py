"""The step audit as `inject run` writes candidates: `audit_on_write` is the run's `RunSpec.candidate_audit`, so
every candidate carries its flags (`Candidate.step_audit`) from the moment it is written."""
from __future__ import annotations

import logging
from collections import Counter

from injector.records.audit_flags import StepAuditFindings
from injector.records.models import Candidate
from injector.triage.step_audit.audit import audit_candidate

log = logging.getLogger("injector")


def audit_on_write(candidate: Candidate) -> Candidate:
    """`candidate` with its step audit recorded; unchanged (no audit recorded) if the audit itself fails, so an
    audit bug never loses a candidate."""
    try:
        found = audit_candidate(candidate, candidate.category).recorded()
    except Exception as exc:  # noqa: BLE001 - logged: an audit bug must not drop a candidate
        log.warning("step audit failed on %s (%s: %s); written without it", candidate.id, type(exc).__name__, exc)
        return candidate
    audited = candidate.model_copy()
    audited.step_audit = found
    return audited


def audit_findings(candidate: Candidate, *, recompute: bool = False) -> StepAuditFindings:
    """The candidate's step audit: as recorded when it was written, or computed now (a run written before the
    audit, or `recompute` after a reviewer's correction changed its steps or labels)."""
    if candidate.step_audit is not None and not recompute:
        return candidate.step_audit
    return audit_candidate(candidate, candidate.category).recorded()


def flagged_for_build(candidate: Candidate, corrected: bool, required: bool) -> bool | None:
    """Whether `inject build` sees a flag on the candidate (None: not audited and not required to be): computed
    only where needed, the recorded audit otherwise."""
    if not required and (candidate.step_audit is None or corrected):
        return None if candidate.step_audit is None else audit_findings(candidate, recompute=True).flagged
    return audit_findings(candidate, recompute=corrected).flagged


def flag_table(counts: Counter[str], total: Counter[str]) -> str:
    """Per category: audited rows and rows with a step-audit flag (a Markdown table for the card)."""
    rows = ["| category | audited | flagged |", "|---|---|---|"]
    rows += [f"| {category} | {total[category]} | {counts[category]} |" for category in sorted(total)]
    rows.append(f"| **total** | {sum(total.values())} | {sum(counts.values())} |")
    return "\n".join(rows)
