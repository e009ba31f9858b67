"""Measure completion tokens per category and output mode on PRMBench's GPT-4o answers; regenerate the dry run's
table (`injector/runner/estimates.py`) and check its estimate against the replayed answers.

Every answer of PRMBench's train-phase-1 category files (GPT-4o's own injections, 400 per category) is written in
both of our answer forms (`injector.runner.estimates.prmbench_answers`: the full-mode fields, and the same modification
as edits) and tokenised locally with litellm's gpt-4o counter. Per category and mode, a least-squares line
`tokens = base + per_solution_token * solution_tokens` is fitted on records 26-400; the first 25 of each file (the
records in tests/fixtures/prmbench) are held out, and for them the script prints the dry run's estimate
(`injector.runner.loop.dry_run` with `LLMEngine("gpt-4o")`, nothing sent) next to the tokens of the same answers
replayed. multi_solutions has only its 10 fixture records: a ratio through the origin, in-sample.

    python bench/completion_tokens.py [--data DIR]   # DIR: the prm800k_train_p1_first400_4o_*.jsonl files
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

import numpy as np  # noqa: E402

from injector.engines.llm import LLMEngine, import_litellm  # noqa: E402
from injector.runner.estimates import prmbench_answers, solution_text  # noqa: E402
from injector.runner.loop import RunSpec, dry_run  # noqa: E402
from injector.sources import load_trajectories  # noqa: E402
from injector.taxonomy import Taxonomy  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = ROOT.parent / "shared" / "fixtures" / "prmbench" / "train-p1"
FIXTURES = ROOT / "tests" / "fixtures" / "prmbench"
MULTI_SOLUTIONS = FIXTURES / "prm_test_p12_multi_solutions.first10.jsonl"
HELD_OUT = 25
"""The first records of each file: the ones in tests/fixtures, kept out of the fit and used to check it."""
MODES = ("edits", "full")
MIN_RECORDS_FOR_A_LINE = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    data = parser.parse_args().data
    files = sorted(data.glob("prm800k_train_p1_first400_4o_*.jsonl"))
    if not files:
        sys.exit(f"{data}: no prm800k_train_p1_first400_4o_*.jsonl files (pass --data DIR)")
    litellm = import_litellm()

    def tokens(text: str) -> int:
        return litellm.token_counter(model="gpt-4o", text=text)

    def measure(path: Path) -> list[dict]:
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                answers = prmbench_answers(record)
                rows.append({"classification": record["classification"],
                             "solution": tokens(solution_text(record["original_process"])),
                             **{mode: tokens(json.dumps(answer, ensure_ascii=False))
                                for mode, answer in answers.items()}})
        return rows

    fits: dict[str, dict[str, tuple[float, float]]] = {}
    pooled: list[dict] = []
    held_out: dict[str, list[dict]] = {}
    for path in [*files, MULTI_SOLUTIONS]:
        rows = measure(path)
        classification = rows[0]["classification"]
        multi = path == MULTI_SOLUTIONS
        train = rows if multi else rows[HELD_OUT:]
        held_out[classification] = rows[:HELD_OUT]
        pooled += [] if multi else train
        fits[classification] = {mode: fit(train, mode) for mode in MODES if mode in train[0]}
    pooled_fit = {mode: fit(pooled, mode) for mode in MODES}

    print("# classification -> output mode -> (base tokens, tokens per source-solution token)")
    print("COMPLETION_TOKEN_FITS: dict[str, dict[str, tuple[float, float]]] = {")
    for classification, by_mode in fits.items():
        cells = ", ".join(f'"{mode}": ({base:.1f}, {slope:.3f})' for mode, (base, slope) in by_mode.items())
        print(f'    "{classification}": {{{cells}}},')
    print("}")
    cells = ", ".join(f'"{mode}": ({base:.1f}, {slope:.3f})' for mode, (base, slope) in pooled_fit.items())
    print(f"POOLED_FIT: dict[str, tuple[float, float]] = {{{cells}}}")
    print()
    compare(held_out)


def fit(rows: list[dict], mode: str) -> tuple[float, float]:
    """A least-squares line; with few records (multi_solutions has 10) a ratio through the origin instead, since
    a line through ten points can come out with a negative slope."""
    solution, answer = [row["solution"] for row in rows], [row[mode] for row in rows]
    if len(rows) < MIN_RECORDS_FOR_A_LINE:
        return 0.0, sum(answer) / sum(solution)
    slope, base = np.polyfit(solution, answer, 1)
    return float(base), float(slope)


def compare(held_out: dict[str, list[dict]]) -> None:
    """The dry run's estimate for the fixture records vs the tokens of PRMBench's answers to them."""
    taxonomy = Taxonomy.load()
    by_classification = {c.classification: c for c in taxonomy.categories}
    engine = LLMEngine("gpt-4o")
    print(f"{'category':22} {'units':>5} {'edits: estimate':>16} {'replayed':>9} {'full: estimate':>15} "
          f"{'replayed':>9}")
    totals = {"units": 0, "edits": [0, 0], "full": [0, 0]}
    for classification, rows in held_out.items():
        category = by_classification[classification]
        path = next(FIXTURES.glob(f"*_{classification}*.jsonl"))
        cells = []
        for mode in MODES:
            if mode not in rows[0]:
                cells.append(("-", "-"))
                continue
            report = dry_run(load_trajectories(path, "prmbench"),
                             RunSpec(taxonomy=taxonomy, categories=[category], output_mode=mode), engine)
            assert report.units == len(rows), (path, report.units)  # the same units as the replayed answers
            replayed = sum(row[mode] for row in rows)
            cells.append((report.completion_tokens_estimate, replayed))
            if category.id != "multi_solution":
                totals[mode][0] += report.completion_tokens_estimate
                totals[mode][1] += replayed
        totals["units"] += 0 if category.id == "multi_solution" else len(rows)
        print(f"{category.id:22} {len(rows):5d} {cells[0][0]:>16} {cells[0][1]:>9} {cells[1][0]:>15} "
              f"{cells[1][1]:>9}")
    print(f"{'8 categories':22} {totals['units']:5d} {totals['edits'][0]:>16} {totals['edits'][1]:>9} "
          f"{totals['full'][0]:>15} {totals['full'][1]:>9}")
    for mode in MODES:
        estimate, replayed = totals[mode]
        print(f"{mode}: {estimate / totals['units']:.0f} estimated vs {replayed / totals['units']:.0f} replayed "
              f"tokens per unit ({estimate / replayed - 1:+.1%})")


if __name__ == "__main__":
    main()
