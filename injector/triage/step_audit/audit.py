"""The audit of a solution's steps, and the flags it raises on a labelled record (flags, never relabelling)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from injector.records.audit_flags import Finding, StepAuditFindings
from injector.sources.labelled import StepRecord
from injector.triage.step_audit.check import HYPOTHETICAL, REJECTED_HERE, LinkCheck, check_link
from injector.triage.step_audit.relations import find_links
from injector.triage.step_audit.worker import SympyWorker

COMPUTATION_CATEGORIES = frozenset({"counterfactual", "confidence", "step_contradiction", "numerical_calculation"})
"""Categories whose injected error is a computation, so an error step there should hold a checkably false relation."""

_WORKER: SympyWorker | None = None
WORKED_HYPOTHESIS_REACH = 2
"""Steps back to a plugged-in value, and on to its rejection, for a false relation between them to be uncertain."""


def default_worker() -> SympyWorker:
    """The process-wide sympy worker (started on first use)."""
    global _WORKER
    if _WORKER is None:
        _WORKER = SympyWorker()
    return _WORKER


class StepAudit(BaseModel):
    """What the audit found in one step."""

    step: int
    checks: list[LinkCheck] = Field(default_factory=list)
    skipped: int = 0
    """Links found but not checkable (free variables, unreadable notation, timed out)."""

    @property
    def checkable(self) -> bool:
        return bool(self.checks)

    @property
    def false_checks(self) -> list[LinkCheck]:
        return [check for check in self.checks if check.status == "false"]


class SolutionAudit(BaseModel):
    """Every step of one solution, audited."""

    steps: list[StepAudit]
    skip_reasons: dict[str, int] = Field(default_factory=dict)

    @property
    def checked_steps(self) -> int:
        return sum(step.checkable for step in self.steps)


def audit_steps(steps: list[str], worker: SympyWorker | None = None) -> SolutionAudit:
    """Find and check every closed relation of every step (steps numbered from 1)."""
    worker = worker or default_worker()
    audits, reasons = [], Counter[str]()
    for number, text in enumerate(steps, 1):
        audit = StepAudit(step=number)
        following = steps[number] if number < len(steps) else None
        for link in find_links(text):
            result = check_link(link, number, text, following, worker)
            if isinstance(result, str):
                audit.skipped += 1
                reasons[result] += 1
            else:
                if result.status == "false" and _worked_hypothesis(steps, number):
                    result.status, result.uncertainty = "uncertain", "rejected"
                audit.checks.append(result)
        audits.append(audit)
    return SolutionAudit(steps=audits, skip_reasons=dict(reasons))


def _worked_hypothesis(steps: list[str], number: int) -> bool:
    """Whether step `number` works through a value plugged in shortly before ("If we plug in -7 ...") that a step
    shortly after rejects ("This is incorrect, so x cannot be -7"): a plug-in-and-reject across steps."""
    reach = WORKED_HYPOTHESIS_REACH
    before, after = steps[max(0, number - 1 - reach):number - 1], steps[number:number + reach]
    return any(HYPOTHETICAL.search(text) for text in before) and any(REJECTED_HERE.search(text) for text in after)


class RecordAudit(BaseModel):
    """A labelled record's audit: the per-step checks and the flags."""

    id: str
    category: str
    findings: list[Finding] = Field(default_factory=list)
    steps: int
    checked_steps: int
    error_steps: list[int] = Field(default_factory=list)
    solution: SolutionAudit

    def recorded(self) -> StepAuditFindings:
        """What a candidate keeps of this audit."""
        agreeing = sum(len(step.false_checks) for step in self.solution.steps if step.step in self.error_steps)
        return StepAuditFindings(steps=self.steps, checked_steps=self.checked_steps, findings=self.findings,
                                 false_in_error_steps=agreeing)


def _record_fields(record: Any) -> tuple[str, list[str], list[int], list[int]]:
    """(id, steps, error steps, modified steps) of a Candidate, a PRMBench record or a split row."""
    if isinstance(record, StepRecord):
        return record.id, record.modified_process, record.error_steps, record.modified_steps
    data = record.model_dump() if hasattr(record, "model_dump") else dict(record)
    steps = data.get("modified_process")
    if not isinstance(steps, list):
        raise ValueError("a record with a `modified_process` list of steps expected")
    item_id = str(data.get("id") or data.get("idx") or "")
    return (item_id, [str(step) for step in steps], [int(k) for k in data.get("error_steps") or []],
            [int(k) for k in data.get("modified_steps") or []])


def _downstream_context(step: int, error_steps: list[int], modified_steps: list[int]) -> bool:
    """A labelled error step after the first one that the edit did not itself change: the injected error's
    consequence carried forward, where true arithmetic on wrong inputs is expected."""
    return bool(error_steps) and step > min(error_steps) and step not in modified_steps


def audit_candidate(record: Any, category: str, worker: SympyWorker | None = None) -> RecordAudit:
    """Audit a Candidate-like record (Candidate, PRMBench record or split row) and flag what the labels miss."""
    item_id, steps, error_steps, modified_steps = _record_fields(record)
    solution = audit_steps(steps, worker)
    findings = [Finding(kind="error_step_out_of_range", step=k,
                        message=f"error step {k} lies past the last step ({len(steps)})")
                for k in error_steps if not 1 <= k <= len(steps)]
    for audit in solution.steps:
        if audit.step not in error_steps:
            findings.extend(Finding(kind="unlabelled_false_step", step=audit.step, relation=check.relation,
                                    written_value=check.right_value, true_value=check.true_value,
                                    message=f"step {audit.step} is not labelled an error but asserts "
                                            f"{check.relation} (left side = {check.true_value})")
                            for check in audit.false_checks)
        elif (category in COMPUTATION_CATEGORIES and audit.checkable and not audit.skipped
              and all(check.status == "true" for check in audit.checks)
              and not _downstream_context(audit.step, error_steps, modified_steps)):
            findings.append(Finding(kind="error_step_true", step=audit.step,
                                    relation="; ".join(check.relation for check in audit.checks),
                                    message=f"error step {audit.step} of a {category} item holds only true relations"))
    return RecordAudit(id=item_id, category=category, findings=findings, steps=len(steps),
                       checked_steps=solution.checked_steps, error_steps=error_steps, solution=solution)
