"""Bootstrap confidence intervals for `inject eval`'s figures, and the paired difference of two reports.

A resample draws, within each category (the strata), as many whole solutions as the category has, with replacement;
the figures are recomputed from the resampled solutions' contributions (metrics.VECTOR) by the same functions that
give the point estimates. The interval is the percentile interval of the resampled figures (resamples where a
figure is undefined are left out of its interval, and counted).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping, Sequence

FIGURE_KEYS = ("prmscore", "f1", "f1_neg", "acc_error", "acc_correct", "accuracy", "average_f1")
"""The figures that get an interval, wherever they are in the report."""
DEFAULT_RESAMPLES, DEFAULT_SEED, DEFAULT_LEVEL = 1000, 0, 0.95

Totals = dict[str, list[int]]
FiguresOf = Callable[[Totals], dict[str, Any]]
Path_ = tuple[str, ...]


@dataclass(frozen=True)
class BootstrapSettings:
    """How many resamples, from which seed, and the interval's level."""

    resamples: int = DEFAULT_RESAMPLES
    seed: int = DEFAULT_SEED
    level: float = DEFAULT_LEVEL

    def describe(self) -> dict[str, Any]:
        return {"resamples": self.resamples, "seed": self.seed, "level": self.level,
                "method": "percentile; whole solutions resampled within each category"}


def figure_paths(figures: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """The path of every figure (a FIGURE_KEYS entry holding a number) in a nested report dict."""
    if not isinstance(figures, dict):
        return
    for key, value in figures.items():
        if key in FIGURE_KEYS and isinstance(value, (int, float)) and not isinstance(value, bool):
            yield (*prefix, key)
        elif isinstance(value, dict) and key != "ci":
            yield from figure_paths(value, (*prefix, key))


def _get(figures: Any, path: Path_) -> float | None:
    for key in path:
        if not isinstance(figures, dict):
            return None
        figures = figures.get(key)
    return figures if isinstance(figures, (int, float)) and not isinstance(figures, bool) else None


Strata = list[tuple[str, Any]]
"""Per category, in sorted order: its name and its items' VECTOR rows (a numpy array)."""


def _strata(categories: Sequence[str], vectors: Any) -> Strata:
    names: dict[str, int] = {}
    codes = [names.setdefault(category, len(names)) for category in categories]
    return strata_of(codes, list(names), vectors)


def strata_of(codes: Sequence[int], names: Sequence[str], vectors: Any) -> Strata:
    """The strata of items whose categories are `names[code]` and whose VECTOR rows are `vectors` (rows, or their
    ints one row after the other: an `array`), each stratum's rows in the items' order."""
    import numpy as np

    rows = np.asarray(vectors).reshape(len(codes), -1) if len(codes) else np.zeros((0, 0), dtype=np.int64)
    by_code = np.asarray(codes)
    strata = [(names[code], rows[by_code == code]) for code in sorted(range(len(names)), key=names.__getitem__)]
    # A resample's sum is at most (rows) x (largest entry): 32-bit rows (half the memory, twice as fast to sum)
    # while that fits, 64-bit past it.
    return [(name, part if part.dtype == np.int64 or len(part) * int(part.max(initial=0)) < 2**31
             else part.astype(np.int64)) for name, part in strata]


def stratum_totals(strata: Strata) -> Totals:
    """Per category, the sum of its rows."""
    return _totals(strata, None)


def _draws(strata: Strata, settings: BootstrapSettings) -> Iterator[list[Any]]:
    """Per resample, the drawn row numbers of each stratum (as many as it has, with replacement)."""
    import numpy as np

    rng = np.random.default_rng(settings.seed)
    for _ in range(settings.resamples):
        yield [rng.integers(0, len(rows), len(rows)) for _, rows in strata]


def _totals(strata: Strata, drawn: Sequence[Any] | None) -> Totals:
    """Per category, the sum of its drawn rows (every row once when `drawn` is None). A row drawn k times counts
    k times: a weighted sum, O(items) in numpy whatever the number of categories."""
    import numpy as np

    if drawn is None:
        return {category: rows.sum(axis=0).tolist() for category, rows in strata}
    # In the rows' own type: `strata_of` keeps 32-bit rows only where no weighted sum can pass 2^31.
    return {category: (np.bincount(picked, minlength=len(rows)).astype(rows.dtype, copy=False) @ rows).tolist()
            for (category, rows), picked in zip(strata, drawn, strict=True)}


def _interval(values: Sequence[float], level: float) -> list[float] | None:
    import numpy as np

    if not values:
        return None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(np.asarray(values, dtype=float), [tail, 100 - tail])
    return [float(low), float(high)]


def add_intervals(point: dict[str, Any], strata: Strata, figures_of: FiguresOf,
                  settings: BootstrapSettings) -> dict[str, Any]:
    """Put a `ci` dict (figure -> [low, high], or None when no resample defines it) beside every figure of
    `point`, from `settings.resamples` resamples of `strata`; returns the bootstrap's description."""
    paths = list(figure_paths(point))
    samples: dict[Path_, list[float]] = {path: [] for path in paths}
    for drawn in _draws(strata, settings):
        resampled = figures_of(_totals(strata, drawn))
        for path in paths:
            value = _get(resampled, path)
            if value is not None:
                samples[path].append(value)
    undefined = 0
    for path in paths:
        node = point
        for key in path[:-1]:
            node = node[key]
        node.setdefault("ci", {})[path[-1]] = _interval(samples[path], settings.level)
        undefined += len(samples[path]) < settings.resamples
    return {**settings.describe(), "figures": len(paths), "figures_undefined_in_some_resamples": undefined}


def paired_differences(categories: Sequence[str], vectors_a: Sequence[Sequence[int]],
                       vectors_b: Sequence[Sequence[int]], figures_of: FiguresOf, paths: Sequence[Path_],
                       settings: BootstrapSettings) -> dict[Path_, dict[str, Any]]:
    """Per figure path: A − B on the full items and its paired bootstrap interval (the same resampled solutions
    for both), and whether the interval contains 0 ("within noise")."""
    a, b = _strata(categories, vectors_a), _strata(categories, vectors_b)
    point_a, point_b = figures_of(_totals(a, None)), figures_of(_totals(b, None))
    samples: dict[Path_, list[float]] = {path: [] for path in paths}
    for drawn in _draws(a, settings):
        resampled_a = figures_of(_totals(a, drawn))
        resampled_b = figures_of(_totals(b, drawn))
        for path in paths:
            value_a, value_b = _get(resampled_a, path), _get(resampled_b, path)
            if value_a is not None and value_b is not None:
                samples[path].append(value_a - value_b)
    result = {}
    for path in paths:
        value_a, value_b = _get(point_a, path), _get(point_b, path)
        interval = _interval(samples[path], settings.level)
        result[path] = {"a": value_a, "b": value_b,
                        "difference": None if value_a is None or value_b is None else value_a - value_b,
                        "ci": interval, "within_noise": None if interval is None else interval[0] <= 0 <= interval[1]}
    return result


def figures_function(kinds: Mapping[str, str], protocol: str, *, step_labels: bool, subsets: bool) -> FiguresOf:
    """The report's figures from per-category totals (what the point estimate and every resample compute)."""
    from injector.evaluate.metrics import processbench_from_totals, prmbench_from_totals

    def figures_of(totals: Totals) -> dict[str, Any]:
        return {"prmbench": prmbench_from_totals(totals, kinds, protocol) if step_labels else None,
                "processbench": processbench_from_totals(totals, subsets=subsets)}

    return figures_of
