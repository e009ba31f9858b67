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
from injector.evaluate.metrics import DEFAULT_THRESHOLD, SWEEP_METRICS, EvalItem
from injector.evaluate.report import compare, compute_metrics, prediction_lines, report_header, write_comparison, write_report
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

    def score(self, items: Sequence[EvalItem], out: Path) -> ScorerResult:
        return read_scores(self.path, items)


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
             sweep_metric: str | None = None, plots: bool = True) -> EvalResult:
    """Read the split, score it, compute the metrics and write the report directory `out`."""
    loaded = load_split(split, split=split_name, taxonomy=Taxonomy.load(taxonomy))
    out = Path(out)
    result = scorer.score(loaded.items, out)
    metrics = {**report_header(str(split), len(loaded.items), result.scorer),
               **compute_metrics(loaded.items, result, threshold=threshold, sweep_metric=sweep_metric),
               "cost": result.cost,
               "input": {"dropped_error_steps": loaded.dropped_error_steps, "excluded": len(loaded.excluded)}}
    predictions = prediction_lines(loaded.items, result, metrics["threshold"], with_dev=sweep_metric is not None)
    files = write_report(out, metrics, predictions, loaded.items, result.scores, plots=plots)
    notes = list(result.notes)
    if plots and not any(name.endswith(".png") for name in files):
        notes.append("matplotlib is not installed: no plots (pip install matplotlib)")
    return EvalResult(out=out, split=loaded, metrics=metrics, files=files, notes=notes)


__all__ = ["DEFAULT_THRESHOLD", "SWEEP_METRICS", "EvalItem", "EvalResult", "Scorer", "ScorerResult", "ScoresFile",
           "compare", "evaluate", "load_split", "write_comparison"]
