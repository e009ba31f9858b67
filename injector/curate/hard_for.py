"""`inject build --hard-for REPORT...`: adversarial filtering against a panel of PRMs or judges (as AFLite filtered
NLI data): keep the items that at least `k` panel models get wrong at the first error step, and say how that
filtering reorders models that were *not* in the panel, since filtering against one family is known to reorder
others.

A panel model's answer on an item comes from its `inject eval` report (`predictions.jsonl`, one line per solution):
it is right when `first_error_right` is true (the first step it flags is the labelled first error; for a correct
solution, it flags none). A line with no valid scores (`valid: false`) counts as wrong: the model did not find the
error. The ranking is by that same first-error accuracy, the one figure defined for every model and every item.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from injector.util.errors import InputError, UserError
from injector.util.json_bounds import jsonl_lines
from injector.util.safe_files import require_regular_or_missing

PREDICTIONS_FILE = "predictions.jsonl"
HARD_FOR_FILE = "hard-for.json"
DEFAULT_RESAMPLES, DEFAULT_LEVEL = 1000, 0.95


@dataclass(frozen=True)
class PanelAnswers:
    """One model's answers on a split: item id -> whether it found the first error step."""

    name: str
    right: dict[str, bool]
    invalid: int = 0
    """Items the model gave no valid scores for (counted as wrong)."""


def read_answers(path: str | Path) -> PanelAnswers:
    """A model's answers from an `inject eval` report directory (or its `predictions.jsonl`)."""
    path = Path(path)
    file = path / PREDICTIONS_FILE if path.is_dir() else path
    if not file.exists():
        raise UserError(f"{path}: no {PREDICTIONS_FILE}; give the directory `inject eval --out` wrote for a "
                        "panel model")
    require_regular_or_missing(file)
    right: dict[str, bool] = {}
    invalid = 0
    for number, line in jsonl_lines(file, "one prediction object per line, as `inject eval` writes"):
        if not isinstance(line, dict) or not isinstance(line.get("id"), str):
            raise InputError(file, number, "not an `inject eval` prediction (no string `id`)")
        if not isinstance(line.get("first_error_right"), bool):
            raise InputError(file, number, "no boolean `first_error_right`; re-run `inject eval` to write it")
        valid = line.get("valid") is not False
        invalid += not valid
        right.setdefault(line["id"], valid and line["first_error_right"])  # a repeated id: the first line counts
    name = path.name if path.is_dir() else path.parent.name
    return PanelAnswers(name=name or str(path), right=right, invalid=invalid)


@dataclass
class HardFilter:
    """What `--hard-for` kept and dropped, and how the ranking of the models moved."""

    panel: list[str]
    outside: list[str]
    min_wrong: int
    kept: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    accuracy: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """model -> {"full": first-error accuracy on every item, "filtered": on the kept items}."""
    tau_all: dict[str, Any] = field(default_factory=dict)
    """Kendall's tau between the models' order on the full and on the filtered items (all models given)."""
    tau_outside: dict[str, Any] | None = None
    """The same over the models outside the panel only (None with fewer than two)."""

    def as_json(self) -> dict[str, Any]:
        return {"panel": self.panel, "outside": self.outside, "min_wrong": self.min_wrong,
                "kept": self.kept, "dropped": self.dropped, "accuracy": self.accuracy,
                "kendall_tau_all_models": self.tau_all, "kendall_tau_outside_panel": self.tau_outside,
                "rule": "kept: at least min_wrong panel models miss the first error step (invalid answers count "
                        "as misses); tau: first-error accuracy order, full vs filtered items, percentile "
                        "bootstrap over items"}


def _require_every_item(answers: Sequence[PanelAnswers], ids: Sequence[str]) -> None:
    for model in answers:
        missing = [item for item in ids if item not in model.right]
        if missing:
            raise UserError(f"--hard-for: the report {model.name} has no prediction for {len(missing)} of the "
                            f"{len(ids)} items (e.g. {missing[0]}); evaluate every model on the split built from "
                            "the same runs (`inject eval SPLIT --out ...`) first")


def _accuracy(model: PanelAnswers, ids: Sequence[str]) -> float | None:
    return sum(model.right[item] for item in ids) / len(ids) if ids else None


def _tau(full: Sequence[float | None], filtered: Sequence[float | None]) -> float | None:
    from scipy.stats import kendalltau

    if len(full) < 2 or any(v is None for v in (*full, *filtered)):
        return None
    value = kendalltau(full, filtered).statistic
    return None if value != value else float(value)  # NaN: one of the orders is all ties


def _tau_with_interval(models: Sequence[PanelAnswers], ids: Sequence[str], kept: set[str], resamples: int,
                       seed: int, level: float) -> dict[str, Any]:
    """Kendall's tau of the models' accuracy order, full vs kept items, with a percentile bootstrap interval
    (items resampled with replacement; the kept ones among each resample make its filtered set)."""
    import numpy as np

    if len(models) < 2:
        return {"tau": None, "ci": None, "models": [m.name for m in models]}
    point = _tau([_accuracy(m, ids) for m in models], [_accuracy(m, [i for i in ids if i in kept]) for m in models])
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        sample = [ids[k] for k in rng.integers(0, len(ids), len(ids))]
        filtered = [item for item in sample if item in kept]
        value = _tau([_accuracy(m, sample) for m in models], [_accuracy(m, filtered) for m in models])
        if value is not None:
            draws.append(value)
    tail = (1 - level) / 2 * 100
    ci = [float(x) for x in np.percentile(draws, [tail, 100 - tail])] if draws else None
    return {"tau": point, "ci": ci, "models": [m.name for m in models], "resamples": resamples, "seed": seed,
            "defined_in": len(draws)}


def hard_filter(ids: Sequence[str], panel: Sequence[PanelAnswers], outside: Sequence[PanelAnswers] = (), *,
                min_wrong: int | None = None, resamples: int = DEFAULT_RESAMPLES, seed: int = 0,
                level: float = DEFAULT_LEVEL) -> HardFilter:
    """Keep the items (of `ids`) that at least `min_wrong` panel models miss (default: all of them)."""
    if not panel:
        raise UserError("--hard-for needs at least one `inject eval` report of a panel model")
    k = len(panel) if min_wrong is None else min_wrong
    if not 1 <= k <= len(panel):
        raise UserError(f"--hard-min-wrong {k}: give a number from 1 to the {len(panel)} panel reports")
    names = [m.name for m in (*panel, *outside)]
    if len(set(names)) != len(names):
        raise UserError(f"--hard-for/--hard-check: two reports share a directory name ({', '.join(names)}); "
                        "name each model's report directory after the model")
    _require_every_item([*panel, *outside], ids)
    result = HardFilter(panel=[m.name for m in panel], outside=[m.name for m in outside], min_wrong=k)
    for item in ids:
        misses = sum(not model.right[item] for model in panel)
        (result.kept if misses >= k else result.dropped).append(item)
    kept = set(result.kept)
    everyone = [*panel, *outside]
    result.accuracy = {m.name: {"full": _accuracy(m, ids), "filtered": _accuracy(m, result.kept)} for m in everyone}
    result.tau_all = _tau_with_interval(everyone, ids, kept, resamples, seed, level)
    if len(outside) >= 2:
        result.tau_outside = _tau_with_interval(list(outside), ids, kept, resamples, seed, level)
    return result


def summary_lines(result: HardFilter) -> list[str]:
    """What the command prints: kept/dropped, each model's accuracy before and after, the taus."""
    def number(value: float | None) -> str:
        return "—" if value is None else f"{value:.3f}"

    def tau(entry: dict[str, Any] | None) -> str:
        if not entry or entry.get("tau") is None:
            return "undefined"
        ci = entry.get("ci")
        return number(entry["tau"]) + (f" [{number(ci[0])}, {number(ci[1])}]" if ci else "")

    lines = [f"--hard-for: kept {len(result.kept)} of {len(result.kept) + len(result.dropped)} items that at least "
             f"{result.min_wrong} of {len(result.panel)} panel models miss"]
    for name, figures in result.accuracy.items():
        role = "panel" if name in result.panel else "outside"
        lines.append(f"  {name} ({role}): first-error accuracy {number(figures['full'])} -> "
                     f"{number(figures['filtered'])}")
    lines.append(f"  Kendall tau, order of all models, full vs filtered: {tau(result.tau_all)}")
    if result.outside:
        lines.append(f"  Kendall tau, models outside the panel: {tau(result.tau_outside)}"
                     + (" (needs two or more)" if result.tau_outside is None else ""))
    return lines
