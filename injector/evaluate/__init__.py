"""`inject eval`: score a process reward model or an LLM judge on a split, with PRMBench's and ProcessBench's
metrics (README, "Evaluate: `inject eval`").

    from injector.evaluate import EvalRequest, evaluate
    result = evaluate(EvalRequest(split="splits/demo", scores="data/demo_scores.jsonl", out="reports/demo"))
    result.metrics["prmbench"]["overall"]["prmscore"]

Modules: `request.py` (`EvalRequest`: what one evaluation takes), `metrics.py` (the formulas, pure functions),
`splits.py` (the three input kinds), `columns.py` (a split's solutions and a scores file's scores as columns, for
`--scores`), `scorers.py` (a scores file), `judge.py` (an LLM judge through litellm), `prm_server.py` (a PRM served
by vLLM), `report.py` (the report directory, `compare`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol, Sequence

from injector.taxonomy import Taxonomy
from injector.evaluate.bootstrap import BootstrapSettings
from injector.evaluate.columns import KINDS, ItemColumns, ScoreColumns
from injector.evaluate.metrics import CORRECT, DEFAULT_THRESHOLD, SWEEP_METRICS, EvalItem
from injector.evaluate.protocols import PROTOCOLS, LabelRule
from injector.evaluate.report import (Scoring, compare, compute_metrics, prediction_lines, report_header,
                                      write_comparison, write_report)
from injector.evaluate.request import SCORER_CHOICE, EvalConflict, EvalRequest
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


def scorer_of(request: EvalRequest, on_progress: Callable[[int, int], None] | None = None) -> Scorer:
    """The scorer a request names: its scores file, its LLM judge or its PRM server (`on_progress(done, total)`
    hears from the last two)."""
    if request.scores is not None:
        return ScoresFile(request.scores)
    if request.judge is not None:
        from injector.engines import LLMEngine
        from injector.engines.settings import settings_from
        from injector.engines.registry import engine_from_settings
        from injector.evaluate.judge import LLMJudge

        engine = engine_from_settings(settings_from(**request.engine_options()))
        if not isinstance(engine, LLMEngine):
            raise EvalConflict("`judge` needs an LLM (a litellm model string), not the offline engine")
        return LLMJudge(engine, concurrency=request.concurrency, max_cost=request.max_cost, seed=request.seed,
                        on_progress=on_progress)
    if request.prm_server is not None and request.prm_model is not None:
        from injector.engines.cache import RequestCache
        from injector.evaluate.prm_server import PRMServer

        return PRMServer(request.prm_server, request.prm_model, separator=request.step_separator,
                         concurrency=request.concurrency, timeout=request.timeout,
                         max_answer_bytes=request.max_answer_bytes, cache=RequestCache(request.cache_path) if request.use_cache else None,
                         on_progress=on_progress)
    raise EvalConflict(SCORER_CHOICE)


def evaluate(request: EvalRequest, scorer: Scorer | None = None,
             on_progress: Callable[[int, int], None] | None = None) -> EvalResult:
    """Read the split, score it (with `scorer`, else the one the request names: `scorer_of`), compute the metrics
    and write the report directory. The protocol defaults to prmbench for PRMBench's files, strict otherwise; the
    label rule to `threshold:<threshold>`."""
    split = request.split
    scorer = scorer if scorer is not None else scorer_of(request, on_progress)
    loaded = load_split(split, split=request.split_name, taxonomy=Taxonomy.load(request.taxonomy),
                        protocol=request.protocol, texts=not isinstance(scorer, ScoresFile))
    scoring = Scoring(request.rule() or LabelRule("threshold", request.threshold_used), loaded.protocol or "strict",
                      request.bootstrap)
    if isinstance(scorer, ScoresFile):
        scorer = ScoresFile(scorer.path, scoring.protocol)
    out = request.report_dir
    result = scorer.score(loaded.items, out)
    try:
        return _report(request, loaded, result, scoring)
    finally:
        for scores in (result.scores, result.redundancy_scores):
            if isinstance(scores, ScoreColumns):
                scores.close()


def _scored(items: Sequence[EvalItem], scores: Mapping[str, Any]) -> Sequence[EvalItem]:
    """The items but for correct controls without scores (a prmbench scores file may leave them all out); columns
    stay columns (a list of items made from them was ~200 bytes a solution)."""
    if not isinstance(items, ItemColumns):
        return [item for item in items if item.kind != CORRECT or item.id in scores]
    correct = KINDS.index(CORRECT)

    def keep(index: int) -> bool:
        return items.kind[index] != correct or (scores.has(index) if isinstance(scores, ScoreColumns)
                                                else items.id_of(index) in scores)

    return items if all(keep(index) for index in range(len(items))) else items.subset(keep)


def _report(request: EvalRequest, loaded: LoadedSplit, result: ScorerResult, scoring: Scoring) -> EvalResult:
    """Compute the metrics of the scored items and write the report directory."""
    split, out = request.split, request.report_dir
    items = _scored(loaded.items, result.scores)
    sweep_metric = request.sweep_metric if request.sweep else None
    metrics = {**report_header(str(split), len(items), result.scorer),
               **compute_metrics(items, result, threshold=request.threshold_used, sweep_metric=sweep_metric,
                                 scoring=scoring),
               "cost": result.cost,
               "input": {"dropped_error_steps": loaded.dropped_error_steps, "excluded": len(loaded.excluded),
                         "repeated_records": len(loaded.repeated), "out_of_range_items": loaded.out_of_range_items,
                         "controls_built": loaded.controls, "longer_score_lists": result.longer_lists},
               "warnings": loaded.warnings()}
    metrics["warnings"] += _no_hit_warnings(metrics["prmbench"])
    predictions = prediction_lines(items, result, LabelRule("threshold", metrics["threshold"])
                                   if metrics["threshold"] is not None else scoring.rule,
                                   with_dev=sweep_metric is not None, protocol=scoring.protocol)
    files = write_report(out, metrics, predictions, items, result.scores, plots=request.plots)
    notes = list(result.notes)
    if request.plots and not any(name.endswith(".png") for name in files):
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


__all__ = ["PROTOCOLS", "BootstrapSettings", "LabelRule", "DEFAULT_THRESHOLD", "SWEEP_METRICS", "EvalConflict",
           "EvalItem", "EvalRequest", "EvalResult", "Scorer", "ScorerResult", "ScoresFile", "compare", "evaluate",
           "load_split", "scorer_of", "write_comparison"]
