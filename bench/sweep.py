"""The threshold sweep of `inject eval --sweep`: the former one (a full metric pass per candidate threshold,
O(n^2)) against the one-sort sweep (`sweep_threshold`, O(n log n)), side by side at growing sizes, on synthetic
PRM scores (every step its own probability, so every step is a candidate threshold, as with a real PRM).

    python bench/sweep.py                       # 100 .. 100k solutions; the old sweep up to --old-max
    python bench/sweep.py --sizes 1000 100000 --old-max 1000
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from injector.evaluate.metrics import (CORRECT, ERROR, EvalItem, candidate_thresholds, metric_value,  # noqa: E402
                                       sweep_threshold)


def old_sweep(items, scores, metric):
    """The sweep before issue 30 (kept as in tests/test_eval_sweep.py)."""
    best = (None, None)
    for threshold in candidate_thresholds(items, scores):
        value = metric_value(metric, items, scores, threshold)
        if value is not None and (best[1] is None or value > best[1]):
            best = (threshold, value)
    return best


def synthetic(n: int, seed: int = 0) -> tuple[list[EvalItem], dict]:
    """n solutions of 6-18 steps, 80 % with an error; correct steps score higher on average."""
    rng = random.Random(seed)
    items, scores = [], {}
    for k in range(n):
        steps = rng.randint(6, 18)
        first = rng.randint(1, steps) if rng.random() < 0.8 else None
        errors = frozenset(range(first, steps + 1)) if first else frozenset()
        category = rng.choice(["counterfactual", "confidence", "circular_logic", CORRECT] if first is None
                              else ["counterfactual", "confidence", "circular_logic"])
        item = EvalItem(id=f"s{k}", category=category, kind=CORRECT if category == CORRECT else ERROR,
                        steps=("step",) * steps, error_steps=errors if category != CORRECT else frozenset(),
                        first_error=first if category != CORRECT else None)
        items.append(item)
        scores[item.id] = tuple(min(1.0, max(0.0, rng.gauss(0.35 if j in errors else 0.7, 0.2)))
                                for j in range(1, steps + 1))
    return items, scores


def cpu(function, *args):
    start = time.process_time()
    result = function(*args)
    return time.process_time() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 10000, 100000])
    parser.add_argument("--old-max", type=int, default=1000, help="Largest size the old sweep is timed at.")
    parser.add_argument("--metric", choices=["prmscore", "processbench"], default="prmscore")
    args = parser.parse_args()
    print(f"metric {args.metric}; CPU seconds")
    print(f"{'solutions':>10} {'thresholds':>11} {'old s':>9} {'new s':>8} {'old/new':>9}  same result")
    for n in args.sizes:
        items, scores = synthetic(n)
        thresholds = len(candidate_thresholds(items, scores))
        new_seconds, new = cpu(sweep_threshold, items, scores, args.metric)
        if n <= args.old_max:
            old_seconds, old = cpu(old_sweep, items, scores, args.metric)
            same = old[0] == new[0] and abs((old[1] or 0) - (new[1] or 0)) <= 1e-12
            print(f"{n:>10} {thresholds:>11} {old_seconds:>9.2f} {new_seconds:>8.3f} {old_seconds / new_seconds:>9.0f}"
                  f"  {same}")
        else:
            print(f"{n:>10} {thresholds:>11} {'-':>9} {new_seconds:>8.3f} {'-':>9}  (old not run: O(n^2))")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
