"""`inject eval`: score a process reward model or an LLM judge on a split, with PRMBench's and ProcessBench's
metrics (README, "Evaluate: `inject eval`").

    from injector.evaluate import ScoresFile, evaluate
    result = evaluate("splits/demo", ScoresFile("data/demo_scores.jsonl"), out="reports/demo")
    result.metrics["prmbench"]["overall"]["prmscore"]

Modules: `metrics.py` (the formulas, pure functions), `splits.py` (the three input kinds), `scorers.py` (a scores
file), `judge.py` (an LLM judge through litellm), `prm_server.py` (a PRM served by vLLM), `report.py` (the report
directory, `compare`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Sequence

from injector.taxonomy import Taxonomy
from injector.evaluate.bootstrap import BootstrapSettings
from injector.evaluate.metrics import CORRECT, DEFAULT_THRESHOLD, SWEEP_METRICS, EvalItem
from injector.evaluate.protocols import PROTOCOLS, LabelRule, parse_label_rule
from injector.evaluate.report import (Scoring, compare, compute_metrics, prediction_lines, report_header,
                                      write_comparison, write_report)
from injector.evaluate.scorers import ScorerResult, read_scores
from injector.evaluate.splits import LoadedSplit, load_split


class Scorer(Protocol):
    """What gives step scores: `score(items, out)` (`out`: the report directory, where a scorer may keep what it
    needs to resume)."""

    def score(self, items: Sequence[EvalItem], out: Path) -> ScorerResult: ...


@dataclass
class ScoresFile:
    """Scores a PRM wrote to a JSONL file of `{"id", "step_scores"}`."""

    path: str | Path
    protocol: str = "strict"
    """prmbench: lists one longer than the steps and repeated ids accepted (`evaluate` sets it)."""

    def score(self, items: Sequence[EvalItem], out: Path) -> ScorerResult:
        return read_scores(self.path, items, self.protocol)


@dataclass
class EvalResult:
    """What `evaluate` wrote and computed."""

    out: Path
    split: LoadedSplit
    metrics: dict[str, Any]
    files: list[str]
    notes: list[str]


def evaluate(split: str | Path, scorer: Scorer, *, out: str | Path, split_name: str | None = None,
             taxonomy: str | Path | None = None, threshold: float = DEFAULT_THRESHOLD,
             sweep_metric: str | None = None, plots: bool = True, protocol: str | None = None,
             label_rule: str | LabelRule | None = None,
             bootstrap: BootstrapSettings | None = BootstrapSettings()) -> EvalResult:
    """Read the split, score it, compute the metrics and write the report directory `out`. `protocol`: strict or
    prmbench (default: prmbench for PRMBench's files, strict otherwise); `label_rule` (default
    `threshold:<threshold>`); `bootstrap`: the intervals' settings (None: no intervals)."""
    loaded = load_split(split, split=split_name, taxonomy=Taxonomy.load(taxonomy), protocol=protocol)
    rule = parse_label_rule(label_rule) if isinstance(label_rule, str) else label_rule
    scoring = Scoring(rule or LabelRule("threshold", threshold), loaded.protocol or "strict", bootstrap)
    if isinstance(scorer, ScoresFile):
        scorer = ScoresFile(scorer.path, scoring.protocol)
    out = Path(out)
    result = scorer.score(loaded.items, out)
    items = [item for item in loaded.items if item.kind != CORRECT or item.id in result.scores]
    metrics = {**report_header(str(split), len(items), result.scorer),
               **compute_metrics(items, result, threshold=threshold, sweep_metric=sweep_metric, scoring=scoring),
               "cost": result.cost,
               "input": {"dropped_error_steps": loaded.dropped_error_steps, "excluded": len(loaded.excluded),
                         "repeated_records": len(loaded.repeated), "out_of_range_items": loaded.out_of_range_items,
                         "controls_built": loaded.controls, "longer_score_lists": result.longer_lists},
               "warnings": loaded.warnings()}
    metrics["warnings"] += _no_hit_warnings(metrics["prmbench"])
    predictions = prediction_lines(items, result, LabelRule("threshold", metrics["threshold"])
                                   if metrics["threshold"] is not None else scoring.rule,
                                   with_dev=sweep_metric is not None, protocol=scoring.protocol)
    files = write_report(out, metrics, predictions, items, result.scores, plots=plots)
    notes = list(result.notes)
    if plots and not any(name.endswith(".png") for name in files):
        notes.append("matplotlib is not installed: no plots (pip install matplotlib)")
    return EvalResult(out=out, split=loaded, metrics=metrics, files=files, notes=notes)


def _no_hit_warnings(prmbench: dict[str, Any] | None) -> list[str]:
    """prmbench protocol: the classes whose F1 is PRMBench's -1 (no true hit), which lower a PRMScore by 0.5."""
    if prmbench is None:
        return []
    sections = {"overall": prmbench["overall"], **prmbench["per_category"],
                **({"correct controls": prmbench["correct"]} if prmbench["correct"] else {})}
    flagged = [f"{name} {key}" for name, figures in sections.items() for key in figures.get("no_hit", ())]
    return [f"no true hit, F1 written as -1 as PRMBench does: {', '.join(flagged)}"] if flagged else []


__all__ = ["PROTOCOLS", "BootstrapSettings", "LabelRule", "DEFAULT_THRESHOLD", "SWEEP_METRICS", "EvalItem", "EvalResult", "Scorer", "ScorerResult", "ScoresFile",
           "compare", "evaluate", "load_split", "write_comparison"]
