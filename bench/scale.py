"""Every stage at growing sizes: wall, CPU and peak RSS per stage, and the growth exponent between sizes.

Inputs are made from the 401 real PRMBench/PRM800K source solutions (bench/data/train-p1-originals.jsonl): copy k
of a solution adds k to every integer of its question and steps (and gets its own id), so no two units are
alike. Units = trajectories x categories (`--category all`). Stages, each its own `inject` process, on the
offline engine: run (--workers 2), resume of the finished run, stats, stats --cues, build (--include-unreviewed:
the default, the card's cue probe on its sample) and build --no-cues, and eval of the build's PRMBench export
against seeded random step scores (with its plots and bootstrap intervals). CPU and peak RSS are the stage
process's and its workers' (os.wait4). After the table: build's CPU over stats' at each size (issue 30: build no
slower than 3x stats).

    python bench/scale.py                         # 10k and 30k units (this shared 2-core machine)
    python bench/scale.py --units 10000,100000,300000 --keep /tmp/scale
    python bench/scale.py --keep /tmp/scale --stages stats,stats-cues,build,build-no-cues   # on kept runs
    python bench/scale.py --build-rows 10000,100000 --keep /tmp/scale   # build alone, on runs of that many rows

The offline engine accepts few of these units (266 candidates at 10k units), too few rows to show what `build`
costs. `--build-rows` times build alone: the candidates of one offline run of 750 units, copied with every integer
of their texts shifted by the copy number under new ids, trajectory ids and idx (so a `--dedup` keeps most), into
run directories of that many rows; then `stats`, `stats --cues` (stats-cues), `build --no-cues` (build-no-cues),
`build --no-cues --dedup` (build-no-cues-dedup) and `build` (the card's cue probe) on each, and each one's growth
from the first size to the last (RSS x: the last size's peak RSS over the first's); `--stages` picks among them.

`--code DIR` runs the stages on another commit's code (first on sys.path, ahead of this checkout), e.g. main's:

    git archive main | tar -x -C /tmp/main-code
    python bench/scale.py --build-rows 10000,100000 --keep /tmp/scale --stages stats,build-no-cues --code /tmp/main-code
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
INJECT = Path(sys.executable).parent / "inject"
ENV = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true", "HF_HUB_OFFLINE": "1",
       "HF_DATASETS_OFFLINE": "1"}
INTEGER = re.compile(r"\d+")


def make_input(path: Path, trajectories: int) -> Path:
    """`trajectories` distinct solutions: the real ones, then copies with every integer shifted by the copy number."""
    sources = [json.loads(line) for line in (HERE / "data/train-p1-originals.jsonl").read_text().splitlines()]
    with path.open("w", encoding="utf-8") as out:
        for n in range(trajectories):
            record, copy = sources[n % len(sources)], n // len(sources)

            def shift(text: str) -> str:
                return INTEGER.sub(lambda match: str(int(match.group()) + copy), text) if copy else text
            out.write(json.dumps({"id": f"{record['id']}-v{copy}", "question": shift(record["question"]),
                                  "steps": [shift(step) for step in record["steps"]]}) + "\n")
    return path


MEASURER = """
import json, os, subprocess, sys, time
start = time.perf_counter()
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL)
_, status, usage = os.wait4(child.pid, 0)
print(json.dumps({"wall": time.perf_counter() - start, "cpu": usage.ru_utime + usage.ru_stime,
                  "rss": usage.ru_maxrss / 1024, "exit": os.waitstatus_to_exitcode(status)}))
"""
"""Runs the command and reports its figures. A small process of its own, because Linux counts in a child's peak RSS
the memory of the process that forked it (it is folded in at exec): started from this script, whose own memory grows
with the input it made, `inject` would show this script's peak, not its own."""


CODE_INJECT = """
import sys
sys.meta_path[:] = [finder for finder in sys.meta_path if "__editable__" not in str(getattr(finder, "__module__", ""))
                    and "__editable__" not in type(finder).__module__]
sys.path.insert(0, sys.argv.pop(1))
from injector.cli import main
sys.argv[0] = "inject"
main()
"""
"""`inject` on the code `--code` names: an editable install's import finder comes before PYTHONPATH, so it is
removed and the code put first on sys.path."""
CODE: list[str] = []
"""With `--code DIR`: the command that runs `inject` from DIR."""


def measure(args: list[str], cwd: Path) -> dict[str, float]:
    """Wall s, CPU s (user + system, the process and its waited-for workers) and peak RSS MB of one command."""
    inject = CODE or [str(INJECT)]
    done = subprocess.run([sys.executable, "-c", MEASURER, *inject, *args], cwd=cwd, env=ENV,
                          capture_output=True, text=True)
    figures = json.loads(done.stdout)
    if (code := figures.pop("exit")) != 0:
        print(f"  {' '.join(args[:2])}: exit {code}: {done.stderr.strip()[-300:]}", file=sys.stderr)
    return figures


STAGES = ("run", "resume", "stats", "stats-cues", "build", "build-no-cues", "eval")


def stages(work: Path, units: int, categories: int, wanted: tuple[str, ...] = STAGES) -> dict[str, dict[str, float]]:
    """The `wanted` stages on `units` units (without "run", on the run directory a kept `work` holds)."""
    input_path = work / f"input-{units}.jsonl"
    if "run" in wanted or not input_path.exists():
        make_input(input_path, math.ceil(units / categories))
    run_dir, split_dir = work / f"run-{units}", work / f"split-{units}"
    run = ["run", "--category", "all", "--input", str(input_path), "--input-format", "trajectories",
           "--out", str(run_dir), "--workers", "2"]
    build = ["build", str(run_dir), "--out", str(split_dir), "--include-unreviewed", "--overwrite"]
    commands = {"run": run, "resume": run, "stats": ["stats", str(run_dir)],
                "stats-cues": ["stats", str(run_dir), "--cues"], "build-no-cues": [*build, "--no-cues"],
                "build": build}
    figures = {}
    for stage in (stage for stage in STAGES if stage in wanted and stage != "eval"):
        figures[stage] = measure(commands[stage], work)
        if stage == "run":
            written = sum(sum(1 for _ in (run_dir / name).open("rb")) for name in ("candidates.jsonl",
                                                                                     "rejects.jsonl")
                          if (run_dir / name).exists())
            print(f"{units:,} units asked, {written:,} written (candidates + rejects)", flush=True)
    if "eval" in wanted:
        scores = make_scores(split_dir / "prmbench", work / f"scores-{units}.jsonl")
        figures["eval"] = measure(["eval", str(split_dir / "prmbench"), "--scores", str(scores), "--out",
                                   str(work / f"report-{units}")], work)
    return figures


def make_rows(work: Path, rows: int) -> Path:
    """A run directory of `rows` candidates: a 750-unit offline run's, copied with shifted integers (see above)."""
    base = work / "run-base"
    if not (base / "candidates.jsonl").exists():
        run = ["run", "--category", "all", "--input", str(make_input(work / "input-base.jsonl", 150)),
               "--input-format", "trajectories", "--out", str(base), "--workers", "2"]
        measure(run, work)
    originals = [json.loads(line) for line in (base / "candidates.jsonl").open(encoding="utf-8")]
    run_dir = work / f"rows-{rows}"
    run_dir.mkdir(exist_ok=True)
    for name in ("manifest.json", "config.yaml"):
        (run_dir / name).write_bytes((base / name).read_bytes())
    with (run_dir / "candidates.jsonl").open("w", encoding="utf-8") as out:
        for n in range(rows):
            record, copy = dict(originals[n % len(originals)]), n // len(originals)

            def shift(text: str) -> str:
                return INTEGER.sub(lambda match: str(int(match.group()) + copy), text)
            for key in ("original_question", "modified_question", "question"):
                record[key] = shift(record[key])
            for key in ("original_process", "modified_process"):
                record[key] = [shift(step) for step in record[key]]
            for key in ("id", "trajectory_id", "idx", "problem_key"):
                record[key] = f"{record[key]}-c{copy}"
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return run_dir


BUILD_STAGES = ("stats", "stats-cues", "build-no-cues", "build-no-cues-dedup", "build")


def build_stages(work: Path, rows: int, wanted: tuple[str, ...] = BUILD_STAGES) -> dict[str, dict[str, float]]:
    """stats, stats --cues, then build three ways (those `wanted`), on a run directory of `rows` candidates (each
    split removed once timed)."""
    import shutil

    run_dir, split_dir = work / f"rows-{rows}", work / f"split-rows-{rows}"
    if not (run_dir / "candidates.jsonl").exists():
        make_rows(work, rows)
    build = ["build", str(run_dir), "--out", str(split_dir), "--include-unreviewed", "--overwrite"]
    figures = {}
    for stage, extra in (("stats", []), ("stats-cues", ["--cues"])):
        if stage in wanted:
            figures[stage] = measure(["stats", str(run_dir), *extra], work)
            _say(rows, stage, figures[stage])
    for stage, extra in (("build-no-cues", ["--no-cues"]), ("build-no-cues-dedup", ["--no-cues", "--dedup"]),
                         ("build", [])):
        if stage not in wanted:
            continue
        figures[stage] = measure([*build, *extra], work)
        shutil.rmtree(split_dir, ignore_errors=True)
        _say(rows, stage, figures[stage])
    return figures


def _say(rows: int, stage: str, figures: dict[str, float]) -> None:
    print(f"{rows:,} rows: {stage}: {'{wall:.1f} s wall, {cpu:.1f} s CPU, {rss:.0f} MB'.format(**figures)}", flush=True)


def make_scores(export: Path, path: Path) -> Path:
    """Seeded random step scores for every solution of the split's PRMBench export (what a PRM would write)."""
    rng = random.Random(0)
    with path.open("w", encoding="utf-8") as out:
        for file in sorted(export.glob("*.jsonl")):
            for line in file.open(encoding="utf-8"):
                record = json.loads(line)
                out.write(json.dumps({"id": f"{record['idx']}::{record['classification']}",
                                      "step_scores": [rng.random() for _ in record["modified_process"]]}) + "\n")
    return path


def exponent(small: float, large: float, n_small: int, n_large: int) -> float:
    return math.log(max(large, 1e-9) / max(small, 1e-9)) / math.log(n_large / n_small)


def print_table(results: dict[int, dict[str, dict[str, float]]], sizes: list[int]) -> None:
    """Per stage: wall/CPU/RSS at each size, side by side, and the growth exponents from the first to the last."""
    width = max(9, *(len(stage) for stage in results[sizes[0]]))
    print(f"{'stage':<{width}} " + " ".join(f"{f'{size:,} wall/CPU s/RSS MB':>28}" for size in sizes)
          + f" {'CPU exp':>8} {'RSS exp':>8} {'RSS x':>6}")
    for stage in results[sizes[0]]:
        cells = " ".join(f"{'{wall:.1f}/{cpu:.1f}/{rss:.0f}'.format(**results[size][stage]):>28}" for size in sizes)
        first, last = results[sizes[0]][stage], results[sizes[-1]][stage]
        growth = "" if len(sizes) < 2 else (f" {exponent(first['cpu'], last['cpu'], sizes[0], sizes[-1]):>8.2f}"
                                            f" {exponent(first['rss'], last['rss'], sizes[0], sizes[-1]):>8.2f}"
                                            f" {last['rss'] / first['rss']:>6.2f}")
        print(f"{stage:<{width}} {cells}{growth}")


def print_ratios(results: dict[int, dict[str, dict[str, float]]], sizes: list[int]) -> None:
    """Each build stage's CPU over stats' CPU, side by side per size (issue 30's goal: at most 3)."""
    for stage in ("build", "build-no-cues", "stats-cues"):
        if all(stage in results[size] and "stats" in results[size] for size in sizes):
            print(f"{stage + ' / stats CPU':<28} " + " ".join(
                f"{results[size][stage]['cpu'] / max(results[size]['stats']['cpu'], 1e-9):>10.2f}" for size in sizes))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", default="10000,30000", help="comma-separated unit counts")
    parser.add_argument("--categories", type=int, default=6, help="categories `--category all` gives on the offline engine")
    parser.add_argument("--build-rows", help="comma-separated row counts: time build alone (see above)")
    parser.add_argument("--keep", type=Path, help="work here and keep the runs (default: a temporary directory)")
    parser.add_argument("--code", type=Path, help="run the stages on this copy of another commit's code (see above)")
    parser.add_argument("--stages", default=None,
                        help=f"comma-separated, of {', '.join(STAGES)} (with --build-rows: "
                             f"{', '.join(BUILD_STAGES)}); without run, the kept run directories are used")
    args = parser.parse_args()
    sizes = [int(size) for size in (args.build_rows or args.units).split(",")]
    work = args.keep or Path(tempfile.mkdtemp(prefix="scale-"))
    work.mkdir(parents=True, exist_ok=True)
    wanted = tuple(args.stages.split(",")) if args.stages else (BUILD_STAGES if args.build_rows else STAGES)
    if args.code:
        CODE.extend([sys.executable, "-c", CODE_INJECT, str(args.code.resolve())])
    if args.build_rows:
        results = {size: build_stages(work, size, wanted) for size in sizes}
    else:
        results = {size: stages(work, size, args.categories, wanted) for size in sizes}
    print_table(results, sizes)
    print_ratios(results, sizes)
    print(f"work directory: {work}")


if __name__ == "__main__":
    main()
