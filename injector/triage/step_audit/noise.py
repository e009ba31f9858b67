"""Label-noise estimate of a labelled file: flagged items per 100 with a Wilson interval, per category, and the
audit's coverage (the share of steps it could check), on PRMBench-, ProcessBench- or split files."""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel

from injector.triage.step_audit.audit import RecordAudit, audit_candidate
from injector.triage.step_audit.worker import SympyWorker
from injector.sources.labelled import labelled_lines, step_record
from injector.taxonomy import Taxonomy
from injector.util.errors import InputError


def wilson_interval(flagged: int, total: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval for a proportion (95 % by default); (0, 0) for an empty sample."""
    if total <= 0:
        return 0.0, 0.0
    share = flagged / total
    centre = share + z * z / (2 * total)
    spread = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total))
    denominator = 1 + z * z / total
    return max(0.0, (centre - spread) / denominator), min(1.0, (centre + spread) / denominator)


class CategoryNoise(BaseModel):
    """One category's estimate."""

    category: str
    items: int
    flagged_items: int
    per_100: float
    low_per_100: float
    high_per_100: float
    steps: int
    checked_steps: int
    coverage: float
    findings: dict[str, int]


class NoiseEstimate(BaseModel):
    """A file's estimate: every category, all of them together, and each item's audit."""

    path: str
    categories: list[CategoryNoise]
    overall: CategoryNoise
    audits: list[RecordAudit]


def _summary(category: str, audits: list[RecordAudit]) -> CategoryNoise:
    flagged = sum(bool(audit.findings) for audit in audits)
    low, high = wilson_interval(flagged, len(audits))
    steps, checked = sum(a.steps for a in audits), sum(a.checked_steps for a in audits)
    kinds: dict[str, int] = defaultdict(int)
    for audit in audits:
        for finding in audit.findings:
            kinds[finding.kind] += 1
    return CategoryNoise(category=category, items=len(audits), flagged_items=flagged,
                         per_100=100 * flagged / len(audits) if audits else 0.0, low_per_100=100 * low,
                         high_per_100=100 * high, steps=steps, checked_steps=checked,
                         coverage=checked / steps if steps else 0.0, findings=dict(kinds))


def _classifications(taxonomy: Taxonomy | None) -> dict[str, str]:
    return {category.classification: category.id for category in (taxonomy or Taxonomy.load()).categories}


def estimate_label_noise(paths: list[Path], worker: SympyWorker | None = None,
                         taxonomy: Taxonomy | None = None) -> NoiseEstimate:
    """Audit every record of the files (PRMBench's classifications named by the taxonomy's category ids) and
    estimate, per category, the share of items with a flag."""
    by_classification = _classifications(taxonomy)
    by_category: dict[str, list[RecordAudit]] = defaultdict(list)
    for path in paths:
        for line in labelled_lines(Path(path)):
            record = step_record(line, by_classification)
            try:
                audit = audit_candidate(record, record.category, worker)
            except (ValueError, TypeError) as exc:
                raise InputError(line.path, line.number, str(exc).splitlines()[0]) from None
            by_category[record.category].append(audit)
    everything = [audit for audits in by_category.values() for audit in audits]
    return NoiseEstimate(path=", ".join(str(p) for p in paths),
                         categories=[_summary(name, by_category[name]) for name in sorted(by_category)],
                         overall=_summary("all", everything), audits=everything)
