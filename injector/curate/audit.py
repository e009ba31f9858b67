"""`inject audit FILE`: audit a published benchmark file against the toolkit's rules, to measure its label noise;
`inject audit SPLIT_DIR`: every PRMBench file of a built split, and that no source problem is on two sides of it."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from injector.answer.contract import AnswerError, parse_answer
from injector.util.errors import InputError, UserError
from injector.util.json_bounds import JsonRefused, jsonl_lines, loads_bounded
from injector.model.problem import row_problem_key
from injector.taxonomy import Taxonomy
from injector.model.trajectory import Trajectory
from injector.inject.validation import validate_answer


@dataclass
class AuditReport:
    """Every record's verdict, and counts per category."""

    records: list[dict[str, Any]] = field(default_factory=list)
    """{line, idx, category, valid, codes, messages} per record."""
    summary: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    findings: list[str] = field(default_factory=list)
    """What is wrong with the split as a whole (a source problem on two sides), one line each."""


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


def audit_split(split_dir: str | Path, taxonomy: Taxonomy | None = None) -> AuditReport:
    """Audit a split directory written by `inject build`: each `prmbench/<classification>.jsonl` (its correct
    controls aside) as `audit_prmbench` does, and every source problem found in more than one of its splits
    (`jsonl/<split>.jsonl`), unless each split is one category (`--by category`: one problem in several
    categories is what such a split is)."""
    split_dir = Path(split_dir)
    if not (split_dir / "jsonl").is_dir() or not (split_dir / "prmbench").is_dir():
        raise UserError(f"{split_dir}: not a split directory (no jsonl/ and prmbench/); pass a directory written by "
                        "`inject build`, or a PRMBench JSONL file")
    report = AuditReport()
    for path in sorted((split_dir / "prmbench").glob("*.jsonl")):
        if path.stem == "correct":  # source solutions as controls: nothing was injected, nothing to audit
            continue
        part = audit_prmbench(path, taxonomy)
        report.records.extend({**record, "file": str(path)} for record in part.records)
        for category, counts in part.summary.items():
            report.summary[category].update(counts)
    report.findings = problems_on_several_sides(split_dir)
    return report


def problems_on_several_sides(split_dir: Path) -> list[str]:
    """One line per source problem (`row_problem_key`) found in more than one split of `split_dir`: a model
    trained on one side has seen the other's problem. Empty for a split per category."""
    sides: dict[str, dict[str, int]] = defaultdict(dict)  # problem -> split -> first line
    by_category = True
    for path in sorted((split_dir / "jsonl").glob("*.jsonl")):
        for number, row in jsonl_lines(path, "each line must be one row of a split written by `inject build`"):
            if not isinstance(row, dict):
                raise InputError(path, number, "not a JSON object; each line must be one row of a split")
            by_category = by_category and row.get("category") == path.stem
            sides[row_problem_key(row)].setdefault(path.stem, number)
    if by_category:
        return []
    return [f"problem {key} is in splits " + ", ".join(f"{name} (jsonl/{name}.jsonl:{line})"
                                                      for name, line in sorted(found.items()))
            for key, found in sorted(sides.items()) if len(found) > 1]
