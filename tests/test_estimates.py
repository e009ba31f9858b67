"""The dry run's completion-token estimate matches what PRMBench's own GPT-4o answers take, per output mode.

The fits in `injector.runner.estimates` were made on records 26-400 of PRMBench's train-phase-1 files (by
bench/completion_tokens.py); the 25 records per category in tests/fixtures/prmbench are not among them, so this
checks the estimate on held-out units: the dry run over those units against the same answers replayed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import LLMEngine, RunSpec, Taxonomy, dry_run, load_trajectories
from injector.cli.commands import main
from injector.engines.llm import import_litellm
from injector.runner.estimates import COMPLETION_TOKEN_FITS, prmbench_answers

PRMBENCH = Path(__file__).parent / "fixtures" / "prmbench"
CATEGORY_FILES = sorted(PRMBENCH.glob("prm800k_train_p1_first400_4o_*.jsonl"))


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return Taxonomy.load()


def replayed_tokens(path: Path, mode: str) -> int:
    """Tokens of PRMBench's answers in the file, written as `mode` answers, with the gpt-4o tokenizer."""
    litellm = import_litellm()
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return sum(litellm.token_counter(model="gpt-4o", text=json.dumps(prmbench_answers(record)[mode],
                                                                     ensure_ascii=False))
               for record in records)


@pytest.mark.parametrize("mode", ["edits", "full"])
def test_estimate_matches_prmbench_answers_replayed(taxonomy, mode):
    by_classification = {c.classification: c for c in taxonomy.categories}
    estimate = replayed = units = 0
    for path in CATEGORY_FILES:
        category = by_classification[path.stem.split("_4o_")[1]]
        report = dry_run(load_trajectories(path, "prmbench"),
                         RunSpec(taxonomy=taxonomy, categories=[category], output_mode=mode), LLMEngine("gpt-4o"))
        assert report.units == 25 and report.pooled_categories == []
        estimate += report.completion_tokens_estimate
        replayed += replayed_tokens(path, mode)
        units += report.units
    # Replayed: 294 (edits) and 441 (full) tokens per unit; the old estimate said ~85 for edits.
    assert units == 200 and abs(estimate / replayed - 1) < 0.10, (mode, estimate / units, replayed / units)


def test_every_prmbench_category_has_its_own_figures(taxonomy):
    for category in taxonomy.categories:
        modes = {"full"} if category.rules.multi_solution else {"edits", "full"}
        assert set(COMPLETION_TOKEN_FITS[category.classification]) == modes, category.id


def test_dry_run_output_states_the_source_of_the_estimate():
    sciences = Path(__file__).resolve().parent.parent / "data" / "sciences.jsonl"
    result = CliRunner().invoke(main, ["run", "--dry-run", "--model", "gpt-4o", "--taxonomy", "projudge",
                                       "--category", "numerical_calculation", "--category", "reasoning",
                                       "--input", str(sciences), "--limit", "2"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith("completion tokens"))
    assert "fitted per category and output mode on PRMBench's GPT-4o answers" in line
    assert "bench/completion_tokens.py" in line
    assert line.endswith("; pooled fit for numerical_calculation, reasoning, which PRMBench lacks)")
