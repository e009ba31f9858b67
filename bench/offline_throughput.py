"""Offline engine throughput on the bundled data, measured side by side in one run.

Prints units (and candidates) per second for three nested stages — the operator alone, operator + parse +
validate (`inject_one`), and a whole `run` writing a run directory — and each stage's speed relative to the whole
run. Absolute numbers vary with the machine; the ratios show where the time goes.

    python bench/offline_throughput.py [--repeat 5]
"""
from __future__ import annotations

import argparse
import asyncio
import tempfile
import time

from injector import IterableInput, OfflineEngine, RunSpec, Taxonomy, inject_one, load_trajectories, run
from injector.engines.base import NotApplicable
from injector.engines.offline import OPERATORS
from injector.records.models import Candidate


def stage_operator(taxonomy, categories, trajectories, engine):
    made = 0
    for trajectory in trajectories:
        for category in categories:
            try:
                engine.perturb(trajectory, category, seed=0, sample=0)
                made += 1
            except NotApplicable:
                pass
    return made


def stage_validated(taxonomy, categories, trajectories, engine):
    async def all_units():
        made = 0
        for trajectory in trajectories:
            for category in categories:
                made += isinstance(await inject_one(taxonomy, category, trajectory, engine), Candidate)
        return made

    return asyncio.run(all_units())


def stage_run(taxonomy, categories, trajectories, engine):
    with tempfile.TemporaryDirectory() as out:
        spec = RunSpec(taxonomy=taxonomy, categories=categories, out=out)
        result = run(IterableInput(trajectories, identity={"input": "bench"}), spec, engine, command=["bench"])
        return result.manifest.counts.candidates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="rounds; the best round of each stage is reported")
    args = parser.parse_args()
    taxonomy = Taxonomy.load()
    categories = [c for c in taxonomy.categories if c.id in OPERATORS]  # numerical_calculation is projudge's
    trajectories = list(load_trajectories())
    engine = OfflineEngine()
    units = len(trajectories) * len(categories)
    stages = {"operator only": stage_operator, "operator + parse + validate": stage_validated,
              "whole run (writes files)": stage_run}
    best: dict[str, tuple[float, int]] = {}
    for _ in range(args.repeat):  # interleaved rounds, so machine noise hits every stage alike
        for name, stage in stages.items():
            start = time.perf_counter()
            candidates = stage(taxonomy, categories, trajectories, engine)
            elapsed = time.perf_counter() - start
            if name not in best or elapsed < best[name][0]:
                best[name] = (elapsed, candidates)
    whole = best["whole run (writes files)"][0]
    print(f"{len(trajectories)} trajectories x {len(categories)} categories = {units} units, best of {args.repeat}")
    print(f"{'stage':30} {'units/s':>10} {'candidates/s':>13} {'speed vs whole run':>19}")
    for name, (elapsed, candidates) in best.items():
        print(f"{name:30} {units / elapsed:10.0f} {candidates / elapsed:13.0f} {whole / elapsed:18.1f}x")


if __name__ == "__main__":
    main()
