"""`inject audit FILE --steps`: the step audit's findings per item and the file's label-noise estimate, as text or
JSON lines. Everything is read (and checked) before anything is printed, so a bad line prints nothing but its
FILE:LINE message."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from injector.sources.labelled import LabelledLine
from injector.taxonomy import Taxonomy
from injector.triage.step_audit.audit import Finding, RecordAudit
from injector.triage.step_audit.noise import NoiseEstimate, NoiseTally, audit_labelled
from injector.triage.step_audit.worker import SympyWorker


class StepAuditReport(BaseModel):
    """What `inject audit --steps` prints: one entry per item, then the estimate."""

    items: list[dict[str, Any]]
    estimate: NoiseEstimate

    @property
    def flagged(self) -> int:
        return self.estimate.overall.flagged_items


def finding_text(finding: Finding) -> str:
    """`unlabelled_false_step@3: 12 \\cdot 5 = 65 (left side = 60)`."""
    if finding.kind == "unlabelled_false_step":
        return f"{finding.kind}@{finding.step}: {finding.relation} (left side = {finding.true_value})"
    if finding.kind == "error_step_true":
        return f"{finding.kind}@{finding.step}: {finding.relation}"
    return f"{finding.kind}@{finding.step}"


def _item(line: LabelledLine, audit: RecordAudit) -> dict[str, Any]:
    return {"file": str(line.path), "line": line.number, "id": audit.id, "category": audit.category,
            "steps": audit.steps, "checked_steps": audit.checked_steps, "error_steps": audit.error_steps,
            "findings": [finding.model_dump() for finding in audit.findings]}


def audit_steps_of_file(path: Path, taxonomy: Taxonomy | None = None,
                        worker: SympyWorker | None = None) -> StepAuditReport:
    """Audit every item of a PRMBench, ProcessBench or split file (or a directory of them); items and estimate."""
    tally, items = NoiseTally(), []
    for line, audit in audit_labelled([path], worker, taxonomy):
        tally.add(audit)
        items.append(_item(line, audit))
    return StepAuditReport(items=items, estimate=tally.estimate(str(path)))


def item_lines(report: StepAuditReport) -> list[str]:
    """One tab-separated line per item: FILE:LINE, id, category, `clean` or its findings."""
    lines = []
    for item in report.items:
        findings = [finding_text(Finding.model_validate(found)) for found in item["findings"]]
        lines.append(f"{item['file']}:{item['line']}\t{item['id']}\t{item['category']}\t"
                     + ("; ".join(findings) if findings else "clean"))
    return lines


def json_lines(report: StepAuditReport) -> list[str]:
    """One JSON object per item, then `{"label_noise": {...}}` (the estimate per category and overall)."""
    estimate = report.estimate.model_dump(exclude={"audits"})
    return ([json.dumps(item, ensure_ascii=False) for item in report.items]
            + [json.dumps({"label_noise": estimate}, ensure_ascii=False)])


def noise_table(estimate: NoiseEstimate) -> str:
    """The label-noise estimate: flagged items per 100 with a 95 % Wilson interval, per category, and coverage."""
    rows = ["| category | items | flagged | per 100 [95 % Wilson] | coverage (steps checked) | findings |",
            "|---|---|---|---|---|---|"]
    for entry in [*estimate.categories, estimate.overall]:
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(entry.findings.items())) or "-"
        rows.append(f"| {entry.category} | {entry.items} | {entry.flagged_items} | {entry.per_100:.1f} "
                    f"[{entry.low_per_100:.1f}, {entry.high_per_100:.1f}] | {100 * entry.coverage:.1f} % "
                    f"({entry.checked_steps}/{entry.steps}) | {kinds} |")
    rows.append("A lower bound on label noise where algebra can see: only steps holding a closed relation are "
                "checked; flags are for a reviewer, labels are never changed.")
    return "\n".join(rows)
