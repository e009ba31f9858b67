"""What `inject build --dedup` and `--decontaminate` drop from offline runs, and how long they take.

For each data set (the bundled sample; PRMBench's 401 train-phase-1 source problems in `bench/data/`) and each
`--samples` value: an offline run over every category into a temporary directory, then `inject build
--include-unreviewed --dedup` (threshold 0.9): rows, drops by rule, and the seconds `near_duplicates` took. Then
`--decontaminate` of each run against PRMBench's fixture files (`tests/fixtures/prmbench/`, 210 records) and against
its own source file (every question is there, so every candidate should go).

    python bench/dedup.py [--samples 1,3] [--data bundled,prmbench]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

for name, value in (("LITELLM_LOCAL_MODEL_COST_MAP", "True"), ("LITELLM_OFFLINE_MODE", "true"),
                    ("HF_HUB_OFFLINE", "1"), ("HF_DATASETS_OFFLINE", "1")):
    os.environ.setdefault(name, value)

from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run  # noqa: E402
from injector.curate.build import BuildReport, assign_splits, collect_rows  # noqa: E402
from injector.triage.dedup import contaminated, near_duplicates, read_benchmarks  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DATA = {"bundled": (None, ROOT / "data" / "sample.jsonl", "question.problem"),
        "prmbench": (ROOT / "bench" / "data" / "train-p1-originals.jsonl",
                     ROOT / "bench" / "data" / "train-p1-originals.jsonl", None)}
PRMBENCH_FIXTURES = sorted((ROOT / "tests" / "fixtures" / "prmbench").glob("*.jsonl"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", default="1,3")
    parser.add_argument("--data", default="bundled,prmbench")
    args = parser.parse_args()
    taxonomy = Taxonomy.load()
    fixtures = read_benchmarks(PRMBENCH_FIXTURES)
    print("| data | samples | candidates | dedup drops (solution / question) | dedup s | in PRMBench fixtures "
          "| in own source |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch:
        for data in args.data.split(","):
            source, source_file, field = DATA[data]
            own = read_benchmarks([source_file], field)
            for samples in map(int, args.samples.split(",")):
                out = Path(scratch) / f"{data}-{samples}"
                spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["all"]), out=out, samples=samples)
                run(load_trajectories(source), spec, OfflineEngine())
                rows = collect_rows([out], include_unreviewed=True, report=BuildReport(out_dir=out))
                splits = assign_splits(rows, by="category", test_size=None, seed=0)
                records = [row.record() for row in rows]
                split_records = [[row.record() for row in split] for split in splits.values()]
                start = time.perf_counter()
                dropped = [d for split in split_records for d in near_duplicates(split, 0.9)]
                seconds = time.perf_counter() - start
                rules = Counter(d.rule for d in dropped)
                print(f"| {data} | {samples} | {len(rows)} | {len(dropped)} ({rules['duplicate_solution']} / "
                      f"{rules['duplicate_question']}) | {seconds:.2f} | {len(contaminated(records, fixtures))} | "
                      f"{len(contaminated(records, own))} |")
                for d in dropped:
                    print(f"|  | | `{d.id}` | {d.rule}: {d.detail} | | | |")


if __name__ == "__main__":
    main()
