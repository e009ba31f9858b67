"""How far the card's "over all categories" cue AUC moves when it is probed on a seeded sample of the sampled rows
(`injector.triage.cues.overall_records`, issue 30) instead of on all of them: on the pooled records of every
category of a PRMBench-format directory (the dev part of its problems by default, as `bench/offline_quality.py`
cuts them), the word probe's overall AUC on all the records, with the fold seed varied (the spread the figure
has anyway), and on samples of a fraction of them drawn with seeds 0..repeats-1 (the fold seed fixed).

    python bench/cue_overall_sample.py PRMBENCH_TRAIN_P1_DIR [--part dev] [--fractions 0.11,0.17,0.33] [--repeats 10]

The card draws at most `--cue-sample` rows (5,000) from at most that many per category: a fraction of 1/6 with
six full categories, 1/9 with nine.
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from injector.curate.stats import load_records
from injector.triage.cues import SEED, cue_records, overall_records, probe, samples
from injector.triage.holdout import source_part


def overall_auc(records: list[dict], seed: int = SEED) -> float | None:
    rows = samples(records)
    return probe([r[2] for r in rows], [r[3] for r in rows], [r[1] for r in rows], seed=seed, top=0)["auc"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("--part", default="dev", choices=("dev", "test"))
    parser.add_argument("--fractions", default="0.11,0.17,0.33")
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    loaded = [(r, s) for r, s in load_records(args.directory)
              if source_part(r.get("original_question") or r.get("question") or "") == args.part]
    pool = [r for r in cue_records(loaded) if r["error_steps"]]
    folds = [overall_auc(pool, seed) for seed in range(5)]
    print(f"{args.part} part: {len(pool)} records with an error step, {len(samples(pool))} steps")
    print(f"all records, fold seeds 0-4: {folds} (sd {statistics.pstdev(folds):.4f})")
    for fraction in (float(f) for f in args.fractions.split(",")):
        size = round(fraction * len(pool))
        drawn = [overall_auc(overall_records(pool, size, seed=seed)) for seed in range(args.repeats)]
        print(f"sample of {size} ({fraction:.0%}), seeds 0-{args.repeats - 1}: mean {statistics.mean(drawn):.4f}, "
              f"sd {statistics.pstdev(drawn):.4f}, min {min(drawn):.4f}, max {max(drawn):.4f} "
              f"(all records, fold seed {SEED}: {folds[SEED]:.4f})", flush=True)


if __name__ == "__main__":
    main()
