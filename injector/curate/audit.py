"""`inject audit FILE`: audit a published benchmark file against the toolkit's rules, to measure its label noise."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from injector.answer.contract import AnswerError, parse_answer
from injector.util.errors import InputError, UserError
from injector.util.json_bounds import JsonRefused, loads_bounded
from injector.taxonomy import Taxonomy
from injector.model.trajectory import Trajectory
from injector.inject.validation import validate_answer


@dataclass
class AuditReport:
    """Every record's verdict, and counts per category."""

    records: list[dict[str, Any]] = field(default_factory=list)
    """{line, idx, category, valid, codes, messages} per record."""
    summary: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))


def audit_prmbench(path: str | Path, taxonomy: Taxonomy | None = None) -> AuditReport:
    """Check each PRMBench record (its `modified_*` fields as a full-mode answer to its `original_*` fields)."""
    path = Path(path)
    taxonomy = taxonomy or Taxonomy.load()
    by_classification = {c.classification: c for c in taxonomy.categories}
    report = AuditReport()
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    with path.open("rb") as handle:
        for line_number, raw in enumerate(handle, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(path, line_number, "not UTF-8 text; save the file as UTF-8") from None
            if not line.strip():
                continue
            try:
                record = loads_bounded(line)
                question, steps = record["original_question"], record["original_process"]
                classification = record["classification"]
            except JsonRefused as exc:
                raise InputError(path, line_number, f"{exc}; a PRMBench record never is") from None
            except json.JSONDecodeError as exc:
                raise InputError(path, line_number, f"not valid JSON ({exc.msg})") from None
            except (KeyError, TypeError) as exc:
                raise InputError(path, line_number, f"missing field {exc}: a PRMBench record needs "
                                 "original_question, original_process and classification") from None
            category = by_classification.get(classification)
            if category is None:
                raise InputError(path, line_number, f"classification {classification!r} is not in taxonomy "
                                 f"{taxonomy.name!r} (known: {', '.join(sorted(by_classification))})")
            trajectory = Trajectory(id=str(record.get("idx", line_number)), question=question, steps=steps or [""],
                                    answer=record.get("ground_truth"))
            try:
                answer = parse_answer(line, multi_solution=category.rules.multi_solution)
                verdict = validate_answer(taxonomy, category, trajectory, answer)
                codes, messages = verdict.codes, verdict.messages
            except AnswerError as exc:
                codes, messages = [exc.code], [exc.message]
            report.records.append({"line": line_number, "idx": record.get("idx"), "category": category.id,
                                   "valid": not codes, "codes": codes, "messages": messages})
            counts = report.summary[category.id]
            counts["records"] += 1
            counts["valid" if not codes else "invalid"] += 1
            counts.update(f"code:{code}" for code in codes)
    return report


def audit_table(report: AuditReport) -> str:
    codes = sorted({key[5:] for counts in report.summary.values() for key in counts if key.startswith("code:")})
    lines = [f"{'category':22} {'records':>7} {'valid':>6} {'invalid':>7}  " + "  ".join(codes)]
    total: Counter = Counter()
    for category, counts in sorted(report.summary.items()):
        total.update(counts)
        lines.append(_line(category, counts, codes))
    lines.append(_line("total", total, codes))
    return "\n".join(lines)


def _line(name: str, counts: Counter, codes: list[str]) -> str:
    cells = "  ".join(f"{counts[f'code:{code}']:>{len(code)}d}" for code in codes)
    return f"{name:22} {counts['records']:7d} {counts['valid']:6d} {counts['invalid']:7d}  {cells}"
