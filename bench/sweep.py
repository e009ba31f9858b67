"""The threshold sweep of `inject eval --sweep`: the quadratic definition (a full metric pass per candidate
threshold, as the sweep was) against the sorted, running-count sweep, side by side on the same split; then the
new one alone at a size the old cannot reach (100k solutions: the old would take hours).

Solutions have 4-12 steps, random PRM-like scores (every step a distinct threshold), one error in 80 %.

    python bench/sweep.py                      # old vs new at 300 solutions, new at 100,000
    python bench/sweep.py --side-by-side 2000 --alone 100000
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from injector.evaluate.metrics import (CORRECT, ERROR, EvalItem, candidate_thresholds,  # noqa: E402
                                       metric_value, sweep_threshold)


def quadratic_sweep(items, scores, metric):
    best = (None, None)
    for threshold in candidate_thresholds(items, scores):
        value = metric_value(metric, items, scores, threshold)
        if value is not None and (best[1] is None or value > best[1]):
            best = (threshold, value)
    return best


def make_split(n: int, seed: int = 0):
    rng = random.Random(seed)
    items, scores = [], {}
    for k in range(n):
        n_steps = rng.randint(4, 12)
        has_error = rng.random() < 0.8
        errors = frozenset({rng.randint(1, n_steps)}) if has_error else frozenset()
        items.append(EvalItem(id=f"s{k}", category="circular_logic" if has_error else "correct",
                              kind=ERROR if has_error else CORRECT, steps=("x",) * n_steps, error_steps=errors,
                              first_error=min(errors) if errors else None))
        scores[f"s{k}"] = tuple(rng.betavariate(2, 1) * (0.5 if step in errors else 1.0)
                                for step in range(1, n_steps + 1))
    return items, scores


def timed(function, *args):
    """(result, wall seconds); the CPU seconds of the whole bench are printed at the end."""
    start = time.perf_counter()
    result = function(*args)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side-by-side", type=int, default=300, help="solutions for old vs new")
    parser.add_argument("--alone", type=int, default=100_000, help="solutions for the new sweep alone")
    args = parser.parse_args()
    items, scores = make_split(args.side_by_side)
    print(f"{'metric':<13} {'solutions':>9} {'thresholds':>10} {'old s':>8} {'new s':>8} {'old/new':>8}  same")
    for metric in ("prmscore", "processbench"):
        old, old_s = timed(quadratic_sweep, items, scores, metric)
        new, new_s = timed(sweep_threshold, items, scores, metric)
        agree = old[0] == new[0] and abs((old[1] or 0) - (new[1] or 0)) <= 1e-12
        print(f"{metric:<13} {len(items):>9,} {len(candidate_thresholds(items, scores)):>10,} {old_s:>8.2f} "
              f"{new_s:>8.3f} {old_s / new_s:>8.0f}  {agree}")
    items, scores = make_split(args.alone, seed=1)
    for metric in ("prmscore", "processbench"):
        _, new_s = timed(sweep_threshold, items, scores, metric)
        print(f"{metric:<13} {len(items):>9,} {len(candidate_thresholds(items, scores)):>10,} {'—':>8} "
              f"{new_s:>8.2f} {'':>8}")


if __name__ == "__main__":
    main()
