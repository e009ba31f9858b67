"""Every candidate the offline engine makes is an error of its category: each category's semantic check
(`tests/semantic_checks/`) runs over every candidate made from the bundled sample and from the original solutions
of the PRMBench fixtures, for several samples per unit."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from semantic_checks import checks_for

from injector import OfflineEngine, Taxonomy, Trajectory, inject_one, load_trajectories
from injector.engines.offline import OPERATORS
from injector.records import Candidate

SAMPLES = 3
PRMBENCH = Path(__file__).parent / "fixtures" / "prmbench"


def prmbench_originals() -> list[Trajectory]:
    """The original solutions of the PRMBench fixture records, once per (question, steps)."""
    seen, originals = set(), []
    for path in sorted(PRMBENCH.glob("prm800k_train_p1_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            key = (record["original_question"], tuple(record["original_process"]))
            if key not in seen:
                seen.add(key)
                originals.append(Trajectory(id=f"prmbench:{record['idx']}:{len(originals)}",
                                            question=record["original_question"],
                                            steps=record["original_process"]))
    return originals


@pytest.fixture(scope="module")
def sources() -> list[Trajectory]:
    return [*load_trajectories(), *prmbench_originals()]


def candidates(category_id: str, sources: list[Trajectory]) -> list[tuple[Trajectory, dict]]:
    """(original, candidate record) for every accepted candidate of this category."""
    taxonomy = Taxonomy.load("projudge" if category_id == "numerical_calculation" else None)
    category, engine, pairs = taxonomy.category(category_id), OfflineEngine(), []
    for trajectory in sources:
        for sample in range(SAMPLES):
            result = asyncio.run(inject_one(taxonomy, category, trajectory, engine, seed=0, sample=sample))
            if isinstance(result, Candidate):
                pairs.append((trajectory, result.model_dump(mode="json")))
    return pairs


CHECKED = sorted(c for c in OPERATORS if checks_for(c) is not None)


@pytest.mark.parametrize("category_id", CHECKED)
def test_every_offline_candidate_passes_its_categorys_semantic_check(category_id, sources):
    module = checks_for(category_id)
    pairs = candidates(category_id, sources)
    assert pairs, f"the offline engine made no {category_id} candidate from {len(sources)} sources"
    problems = [f"{candidate['id']}: {problem}" for original, candidate in pairs
                for problem in module.check(original, candidate)]
    if hasattr(module, "check_all"):
        problems += module.check_all(pairs)
    assert problems == [], f"{len(problems)} problem(s) in {len(pairs)} candidates:\n" + "\n".join(problems[:20])
