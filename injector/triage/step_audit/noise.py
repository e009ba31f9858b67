"""Label-noise estimate of a labelled file: flagged items per 100 with a Wilson interval, per category, and the
audit's coverage (the share of steps it could check), on PRMBench-, ProcessBench- or split files."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

from pydantic import BaseModel, Field

from injector.triage.step_audit.audit import RecordAudit, audit_candidate
from injector.triage.step_audit.worker import SympyWorker
from injector.sources.labelled import LabelledLine, labelled_lines, step_record
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
    """A file's estimate: every category, all of them together, and (when kept) each item's audit."""

    path: str
    categories: list[CategoryNoise]
    overall: CategoryNoise
    audits: list[RecordAudit] = Field(default_factory=list)


class _Counts:
    """One category's running counts (no audit kept: a file of any size costs the same memory)."""

    def __init__(self) -> None:
        self.items = self.flagged = self.steps = self.checked = 0
        self.kinds: Counter[str] = Counter()

    def add(self, audit: RecordAudit) -> None:
        self.items += 1
        self.flagged += bool(audit.findings)
        self.steps += audit.steps
        self.checked += audit.checked_steps
        self.kinds.update(finding.kind for finding in audit.findings)

    def summary(self, category: str) -> CategoryNoise:
        low, high = wilson_interval(self.flagged, self.items)
        return CategoryNoise(category=category, items=self.items, flagged_items=self.flagged,
                             per_100=100 * self.flagged / self.items if self.items else 0.0, low_per_100=100 * low,
                             high_per_100=100 * high, steps=self.steps, checked_steps=self.checked,
                             coverage=self.checked / self.steps if self.steps else 0.0, findings=dict(self.kinds))


class NoiseTally:
    """The label-noise estimate, built one audit at a time."""

    def __init__(self) -> None:
        self.by_category: dict[str, _Counts] = defaultdict(_Counts)
        self.overall = _Counts()

    def add(self, audit: RecordAudit) -> None:
        self.by_category[audit.category].add(audit)
        self.overall.add(audit)

    def estimate(self, path: str, audits: list[RecordAudit] | None = None) -> NoiseEstimate:
        return NoiseEstimate(path=path, categories=[self.by_category[name].summary(name)
                                                    for name in sorted(self.by_category)],
                             overall=self.overall.summary("all"), audits=audits or [])


def _classifications(taxonomy: Taxonomy | None) -> dict[str, str]:
    return {category.classification: category.id for category in (taxonomy or Taxonomy.load()).categories}


def audit_labelled(paths: list[Path], worker: SympyWorker | None = None,
                   taxonomy: Taxonomy | None = None) -> Iterator[tuple[LabelledLine, RecordAudit]]:
    """Every record of the files, audited (PRMBench's classifications named by the taxonomy's category ids)."""
    by_classification = _classifications(taxonomy)
    for path in paths:
        for line in labelled_lines(Path(path)):
            record = step_record(line, by_classification)
            try:
                audit = audit_candidate(record, record.category, worker)
            except (ValueError, TypeError) as exc:
                raise InputError(line.path, line.number, str(exc).splitlines()[0]) from None
            yield line, audit


def estimate_label_noise(paths: list[Path], worker: SympyWorker | None = None,
                         taxonomy: Taxonomy | None = None) -> NoiseEstimate:
    """Audit every record of the files and estimate, per category, the share of items with a flag (every
    item's audit kept in `audits`)."""
    tally, audits = NoiseTally(), []
    for _, audit in audit_labelled(paths, worker, taxonomy):
        tally.add(audit)
        audits.append(audit)
    return tally.estimate(", ".join(str(p) for p in paths), audits)
