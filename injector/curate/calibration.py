"""The blind judge calibrated against people: where a candidate has both an `inject verify` verdict and human
decisions, how often the judge's verdict matches the humans' decision, per category.

The judge passes a candidate when its verdict is `confirmed` (it found the declared first error); the humans'
decision is the adjudicated one, else the majority of the reviewers' latest decisions (a tie leaves the candidate
out). Per category and overall: the share that match, Cohen's kappa (scikit-learn) with a bootstrap interval over
candidates, and the verdict x decision table, so a user sees which categories the judge could triage alone.
`review_figures` gathers these and the reviewers' alpha for `inject stats` and the dataset card.
"""
from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from injector.records.directory import RunDirectory

PASSING = "confirmed"


class Calibration(BaseModel):
    """Judge against humans on one category (or `all`)."""

    category: str
    units: int
    matching: int
    kappa: float
    low: float
    high: float
    table: dict[str, dict[str, int]]
    """Verdict -> human decision (accept / reject) -> candidates."""


def human_decisions(run_dir: Path) -> dict[str, str]:
    """Candidate id -> the humans' decision (adjudicated, else the reviewers' majority; ties left out)."""
    from injector.curate.review.store import ReviewStore, latest_per_reviewer

    if not (Path(run_dir) / "review.sqlite").exists():
        return {}
    rows = ReviewStore(run_dir).rows()
    found = {}
    for candidate_id, decisions in latest_per_reviewer(rows).items():
        counts = Counter(d.decision for d in decisions.values()).most_common()
        if len(counts) == 1 or counts[0][1] > counts[1][1]:
            found[candidate_id] = counts[0][0]
    found.update({d.id: d.decision for d in rows if d.role == "adjudication"})
    return found


def paired_judgements(run_dirs: list[Path]) -> list[tuple[str, str, str]]:
    """(category, verdict, human decision) per candidate that has both."""
    from injector.triage.verdicts import latest_verdicts

    pairs: list[tuple[str, str, str]] = []
    for run_dir in map(Path, run_dirs):
        verdicts, humans = latest_verdicts(run_dir), human_decisions(run_dir)
        if not verdicts or not humans:
            continue
        for candidate in RunDirectory(run_dir).candidates():
            if (verdict := verdicts.get(candidate.id)) is not None and candidate.id in humans:
                pairs.append((candidate.category, verdict, humans[candidate.id]))
    return pairs


def calibration(run_dirs: list[Path], *, rounds: int = 1000, seed: int = 0) -> list[Calibration]:
    """Judge against humans overall and per category (empty when no candidate has both)."""
    from injector.curate.agreement import _kappa_of, _kappa_resampled

    pairs = paired_judgements(run_dirs)
    groups = {"all": pairs, **{c: [p for p in pairs if p[0] == c] for c in sorted({p[0] for p in pairs})}}
    found = []
    for category, group in groups.items() if pairs else []:
        data = np.array([[float(v == PASSING) for _, v, _ in group], [float(h == "accept") for _, _, h in group]])
        generator = np.random.default_rng(seed)
        resampled = [_kappa_resampled(data[:, generator.integers(0, len(group), len(group))]) for _ in range(rounds)]
        finite = [k for k in resampled if not math.isnan(k)]
        low, high = (float(x) for x in np.percentile(finite, [2.5, 97.5])) if finite else (math.nan, math.nan)
        table: dict[str, dict[str, int]] = {}
        for _, verdict, human in group:
            row = table.setdefault(verdict, {"accept": 0, "reject": 0})
            row[human] += 1
        found.append(Calibration(category=category, units=len(group), matching=int((data[0] == data[1]).sum()),
                                 kappa=_kappa_of(data), low=low, high=high, table=table))
    return found


def review_figures(run_dirs: list[Path], *, rounds: int = 1000) -> dict[str, Any] | None:
    """The reviewers' alpha (decision, first error step) and the judge's calibration of run directories, as plain
    data for `inject stats` and the card; None when they hold no review store or nothing to report."""
    from injector.curate.agreement import agreement, rated_candidates

    run_dirs = [Path(path) for path in run_dirs if (Path(path) / "review.sqlite").is_file()]
    if not run_dirs:
        return None
    alphas = [f.model_dump() for f in agreement(rated_candidates(run_dirs), rounds=rounds, pairs=False)
              if f.measure in ("decision", "first_error_step") and f.units]
    calibrated = [c.model_dump() for c in calibration(run_dirs, rounds=rounds)]
    return {"agreement": alphas, "calibration": calibrated} if alphas or calibrated else None


def _number(value: float) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.2f}"


def review_lines(figures: dict[str, Any]) -> list[str]:
    """`review_figures` as text tables: the reviewers' alpha, then judge against humans."""
    lines = []
    if figures.get("agreement"):
        lines += ["", "reviewer agreement (Krippendorff's alpha, 95% bootstrap interval over candidates):",
                  f"{'category':22} {'measure':17} {'alpha':>6} {'interval':>14} {'units':>6}"]
        lines += [f"{f['category'][:22]:22} {f['measure']:17} {_number(f['value']):>6} "
                  f"{'[' + _number(f['low']) + ', ' + _number(f['high']) + ']':>14} {f['units']:6d}"
                  for f in figures["agreement"]]
    if figures.get("calibration"):
        lines += ["", f"judge against humans (judge passes = {PASSING}; kappa with 95% bootstrap interval):",
                  f"{'category':22} {'units':>6} {'match':>6} {'kappa':>6} {'interval':>14}  verdict: accept/reject"]
        for c in figures["calibration"]:
            table = ", ".join(f"{v} {row['accept']}/{row['reject']}" for v, row in sorted(c["table"].items()))
            lines.append(f"{c['category'][:22]:22} {c['units']:6d} {c['matching'] / c['units']:6.0%} "
                         f"{_number(c['kappa']):>6} {'[' + _number(c['low']) + ', ' + _number(c['high']) + ']':>14}"
                         f"  {table}")
    return lines


def review_section(figures: dict[str, Any]) -> str:
    """`review_figures` as the dataset card's section (Markdown)."""
    return "## Reviewer agreement and the judge\n\n```\n" + "\n".join(review_lines(figures)).strip() + "\n```\n"
