"""Category-specific semantic checks of offline candidates: is each error *of its category*, not only well-labelled?

One module per category id (`counterfactual.py`, `circular_logic.py`, ...), each written independently of the
operator that made the candidate (its own parsing, its own criterion), so that it can fail. A module defines

    check(original: Trajectory, candidate: dict) -> list[str]

returning what is wrong with one candidate (a `candidates.jsonl` record: `modified_process`, `error_steps`,
`modified_steps`, `modified_question`, `provenance`, ...) made from `original` ([] when it is right), and may define

    check_all(pairs: list[tuple[Trajectory, dict]]) -> list[str]

for properties of the category's candidates taken together (e.g. certainty phrases on correct steps at least as
often as on error steps). `tests/test_offline_semantics.py` runs them over every candidate the offline engine makes
from the bundled sample and the PRMBench fixtures' original solutions; `bench/offline_quality.py` reports them.
"""
from __future__ import annotations

import importlib
from types import ModuleType


def checks_for(category_id: str) -> ModuleType | None:
    """The check module of a category, or None when it has none."""
    try:
        return importlib.import_module(f"semantic_checks.{category_id}")
    except ModuleNotFoundError as exc:
        if exc.name != f"semantic_checks.{category_id}":
            raise
        return None
