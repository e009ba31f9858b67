"""Where PRMBench's GPT-4o data put the first error step, per category: the share of solutions whose first error
step falls in each tenth of the solution (first error step number / solution length), read from PRMBench's
category files, on the problems of the dev part only (`injector.triage.holdout.source_part`), so that nothing tuned
on them sees the test part.

The offline engine orders a unit's options by these shares (`injector/engines/offline/positions.py` holds the
printed table), so its errors start where PRMBench's do.

    python bench/prmbench_positions.py PRMBENCH_TRAIN_P1_DIR   # the prm800k_train_p1_first400_4o_*.jsonl files
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from injector.curate.stats import load_records  # noqa: E402
from injector.engines.offline.positions import BINS, position_bin  # noqa: E402
from injector.triage.holdout import source_part  # noqa: E402

CATEGORIES = ("redundancy", "circular_logic", "step_contradiction", "confidence")


def shares(directory: Path, category: str) -> tuple[list[float], int]:
    """The share of dev-part solutions of `category` whose first error step is in each tenth, and their count."""
    counts: Counter = Counter()
    for record, _ in load_records(directory):
        question = record.get("original_question") or record.get("question") or ""
        if record.get("category") != category or source_part(question) != "dev":
            continue
        steps = record["modified_process"]
        errors = [k for k in record["error_steps"] if 1 <= k <= len(steps)]
        if errors:
            counts[position_bin(min(errors), len(steps))] += 1
    total = sum(counts.values())
    return [round(counts[b] / total, 3) if total else 0.0 for b in range(BINS)], total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    args = parser.parse_args()
    for category in CATEGORIES:
        row, total = shares(args.directory, category)
        print(f'    "{category}": ({", ".join(f"{s:.3f}" for s in row)}),  # {total} solutions')


if __name__ == "__main__":
    main()
