"""What the cue probes read when there is no cue: PRMBench's records of one category with each solution's error
steps moved to random steps (as many as it had), probed at a given size, many times.

The position and length probes score a step by the error rate of its bin in the training folds, so they learn the
direction of a cue (shorter or longer error steps alike): an AUC below 0.5 is not a cue the other way round but
cross-validation noise (a bin's rate learnt on four folds that the fifth does not follow), and on a few dozen
solutions it reaches far below 0.5. This prints the mean, spread and minimum of each probe's AUC on such
label-shuffled sets, the yardstick for reading a small set's figure.

    python bench/cue_null.py PRMBENCH_TRAIN_P1_DIR [--category confidence] [--size 28] [--repeats 40]
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from injector.curate.stats import load_records  # noqa: E402
from injector.triage.cues import PROBES, _auc_of, cue_records  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--category", default="confidence")
    parser.add_argument("--size", type=int, default=28, help="solutions per probed set")
    parser.add_argument("--repeats", type=int, default=40)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    records = [r for r in cue_records(load_records(args.directory))
               if r["category"] == args.category and r["error_steps"]]
    rng = random.Random(args.seed)
    print(f"{args.category}: {args.size} of {len(records)} solutions, error steps moved at random, "
          f"{args.repeats} sets")
    for which in PROBES:
        aucs = []
        for _ in range(args.repeats if which != "word" else max(1, args.repeats // 3)):
            chosen = rng.sample(records, args.size)
            moved = [{**r, "error_steps": sorted(rng.sample(range(1, len(r["steps"]) + 1), len(r["error_steps"])))}
                     for r in chosen]
            auc = _auc_of(moved, which, 5, 0)
            if auc is not None:
                aucs.append(auc)
        print(f"- {which}: mean {statistics.mean(aucs):.2f}, sd {statistics.stdev(aucs):.3f}, "
              f"min {min(aucs):.2f}, max {max(aucs):.2f} ({len(aucs)} sets)")


if __name__ == "__main__":
    main()
