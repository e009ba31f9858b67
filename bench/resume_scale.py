"""Resume of a finished run, and `inject stats`, at sizes a full run takes too long to reach on a shared machine.

A finished run directory of N units is made from a real one (a `bench/scale.py` run, whose first 401 trajectories
are the real sources, copy 0): the records of copy k are those of copy 0 with the trajectory ids of copy k, so the
directory is what `inject run` on bench/scale.py's input of N units writes (same ids, same record sizes), and its
manifest is that of a one-unit run of the same input (so the configuration matches). Stages, each its own `inject`
process: `resume-1` (the first resume: no index beside the records), `resume-2` (the next one), `stats`.
Wall s, CPU s, peak RSS MB, as bench/scale.py measures them.

    python bench/resume_scale.py --template /tmp/scale/run-10000 --units 10000,100000,300000
    PYTHONPATH=/path/to/older/checkout python bench/resume_scale.py ...   # the same on an older commit
"""
from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale import make_input, measure, print_table  # noqa: E402

SOURCES = 401


def template_records(template: Path) -> dict[str, list[tuple[str, bytes]]]:
    """Source trajectory id (copy 0) -> (file name, line) of its records in the template run."""
    by_source: dict[str, list[tuple[str, bytes]]] = {}
    for name in ("candidates.jsonl", "rejects.jsonl"):
        for line in (template / name).read_bytes().splitlines(keepends=True):
            trajectory = json.loads(line)["trajectory_id"]
            if trajectory.endswith("-v0"):
                by_source.setdefault(trajectory, []).append((name, line))
    return by_source


def template_categories(template: Path) -> int:
    """Units per trajectory in the template run: the categories its `--category all` gave (a file of the
    template's own, not a constant here that drifts from what the offline engine offers)."""
    manifest = json.loads((template / "manifest.json").read_text())
    return len(manifest["config"]["categories"])


def finished_run(work: Path, units: int, by_source: dict[str, list[tuple[str, bytes]]], categories: int,
                 reuse: bool = False) -> tuple[Path, list[str]]:
    """A finished run directory of `units` units and the `inject run` arguments that resume it (`reuse`: the one
    made in `work` before, its indexes removed)."""
    input_path = work / f"input-{units}.jsonl"
    run_dir = work / f"run-{units}"
    args = ["run", "--category", "all", "--input", str(input_path), "--input-format", "trajectories",
            "--out", str(run_dir), "--workers", "2"]
    if reuse and (run_dir / "manifest.json").exists():
        for index in run_dir.glob(".*.idx"):
            index.unlink()
        return run_dir, args
    make_input(input_path, math.ceil(units / categories))
    shutil.rmtree(run_dir, ignore_errors=True)
    measure([*args, "--limit", "1"], work)  # the manifest of this input's configuration
    ids = [json.loads(line)["id"] for line in input_path.read_text().splitlines()]
    outputs = {name: (run_dir / name).open("wb") for name in ("candidates.jsonl", "rejects.jsonl")}
    for n, trajectory in enumerate(ids):
        source = f"{ids[n % SOURCES]}"
        for name, line in by_source.get(source, []):
            outputs[name].write(line.replace(source.encode(), trajectory.encode()))
    for handle in outputs.values():
        handle.close()
    for index in run_dir.glob(".*.idx"):
        index.unlink()
    return run_dir, args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--template", type=Path, required=True, help="a finished bench/scale.py run directory")
    parser.add_argument("--units", default="10000,100000", help="comma-separated unit counts")
    parser.add_argument("--keep", type=Path, help="work here (default: a temporary directory)")
    parser.add_argument("--reuse", action="store_true", help="resume the run directories made in --keep before")
    parser.add_argument("--stages", default="resume-1,resume-2,stats", help="comma-separated stages to time")
    args = parser.parse_args()
    stages = args.stages.split(",")
    sizes = [int(size) for size in args.units.split(",")]
    work = args.keep or Path(tempfile.mkdtemp(prefix="resume-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    by_source = template_records(args.template)
    categories = template_categories(args.template)
    results = {}
    for size in sizes:
        run_dir, run = finished_run(work, size, by_source, categories, args.reuse)
        commands = {"resume-1": run, "resume-2": run, "stats": ["stats", str(run_dir)]}
        results[size] = {stage: measure(commands[stage], work) for stage in stages}
        manifest = json.loads((run_dir / "manifest.json").read_text())
        print(f"{size:,} units: {manifest['counts']['candidates']:,} candidates, {manifest['counts']['rejects']:,} "
              "rejects", flush=True)
    print_table(results, sizes)


if __name__ == "__main__":
    main()
