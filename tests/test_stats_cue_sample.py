"""`inject stats --cues` probes a seeded sample of at most `--cue-sample` solutions per category (the rows
`inject build`'s card probes), so its memory stays flat however large the run; where every category fits in the
sample its figures are those of probing everything. Fixtures: tests/fixtures/prmbench (PRMBench, Apache-2.0)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
from injector.cli.commands import main
from injector.curate import stats
from injector.triage import cues

PRMBENCH = Path(__file__).parent / "fixtures" / "prmbench"
PER_FILE = 25  # records in each of the fixture's category files with error steps (multi_solution: 10, none)


@pytest.fixture(scope="module")
def three(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three of the fixture's category files (two with error steps, multi_solution without): a small probe."""
    directory = tmp_path_factory.mktemp("prmbench")
    for name in ("prm800k_train_p1_first400_4o_circular.jsonl", "prm800k_train_p1_first400_4o_redundency.jsonl",
                 "prm_test_p12_multi_solutions.first10.jsonl"):
        (directory / name).write_bytes((PRMBENCH / name).read_bytes())
    return directory


def _today(path: Path) -> dict[str, Any]:
    """The probe as stats ran it before it sampled: every record's view, one `cue_report` over them all."""
    return cues.cue_report(cues.cue_records(stats.load_records(path)))


def _figures(report: dict[str, Any]) -> dict[str, Any]:
    """A report without what says how much was sampled."""
    drop = ("sample",)
    return {"overall": {k: v for k, v in report["overall"].items() if k not in drop},
            "per_category": {c: {k: v for k, v in row.items() if k not in drop}
                             for c, row in report["per_category"].items()}}


def test_where_every_category_fits_the_figures_are_todays(three: Path):
    expected = _today(three)
    sampled = stats.compute_stats(three, cues=True)  # the default: 5000 per category, far above 25
    assert _figures(sampled["cues"]) == expected  # top n-grams, AUCs, n, problems, dropped error steps
    assert sampled["cues"]["sample_per_category"] == 5000
    assert sampled["cues"]["per_category"]["redundancy"]["sample"] == {"records": PER_FILE, "of": PER_FILE}
    assert sampled["cues"]["overall"]["sample"] == {"records": 2 * PER_FILE, "of": 2 * PER_FILE}
    assert sampled["categories"]["redundancy"]["cue_auc"] == expected["per_category"]["redundancy"]["auc"]
    everything = stats.compute_stats(three, cues=True, cue_sample=None)  # `--cue-sample all`
    assert _figures(everything["cues"]) == expected and everything["cues"]["sample_per_category"] is None


def test_dropped_error_steps_are_counted_over_every_record_not_the_sample():
    full = PRMBENCH / "full"
    expected = _today(full)["overall"]["dropped_error_steps"]
    assert expected > 0
    assert stats.compute_stats(full, cues=True, cue_sample=10)["cues"]["overall"]["dropped_error_steps"] == expected


def _probed(monkeypatch: pytest.MonkeyPatch) -> tuple[list[list[dict[str, Any]]], list[int]]:
    """The records each `cue_report` was given, and after each `word_counts` the rows of every count matrix
    still alive (`test_cue_cost._held_rows`: the probe's memory, counted)."""
    from test_cue_cost import _held_rows

    given: list[list[dict[str, Any]]] = []
    real_report = cues.cue_report

    def report(records: Any, **kwargs: Any) -> dict[str, Any]:
        records = list(records)
        given.append(records)
        return real_report(records, **kwargs)

    monkeypatch.setattr(cues, "cue_report", report)
    return given, _held_rows(monkeypatch)


def test_the_probe_holds_at_most_n_solutions_per_category(three: Path, monkeypatch: pytest.MonkeyPatch):
    given, held = _probed(monkeypatch)
    numbers = stats.compute_stats(three, cues=True, cue_sample=10)
    assert len(given) == 1
    per_category = Counter(record["category"] for record in given[0])
    assert per_category and max(per_category.values()) == 10  # before: every record, 25 per category
    largest = max(sum(len(r["steps"]) for r in given[0] if r["category"] == c and r["error_steps"])
                  for c in per_category)
    report = numbers["cues"]
    # One category's steps counted at a time, or the total's sample's (at most 10 solutions of any categories).
    assert held and max(held) <= max(largest, report["overall"]["n"]) < len(cues.samples(given[0]))
    assert report["per_category"]["redundancy"]["sample"] == {"records": 10, "of": PER_FILE}
    assert report["per_category"]["multi_solution"]["sample"] == {"records": 10, "of": 10}
    assert report["overall"]["sample"] == {"records": 10, "of": 20}  # of the 2 x 10 sampled with an error step
    assert report["per_category"]["redundancy"]["top"]  # stats still lists each category's telling n-grams


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    taxonomy = Taxonomy.load()
    out = tmp_path_factory.mktemp("cue-sample") / "run"
    run(load_trajectories(), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy", "circular_logic"]),
                                     out=out, limit=20), OfflineEngine())
    return out


def test_stats_probes_the_rows_the_builds_card_probes(run_dir: Path, monkeypatch: pytest.MonkeyPatch):
    from injector.curate.card import cue_sample

    candidates = [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]
    assert max(Counter(c["category"] for c in candidates).values()) > 10
    given, _ = _probed(monkeypatch)
    stats.compute_stats(run_dir, cues=True, cue_sample=10)
    picked = cue_sample(candidates, 10)  # the card's rule, on the rows a split of this run would hold
    assert [(r["category"], r["steps"]) for r in given[0]] == [(c["category"], c["modified_process"]) for c in picked]


def test_the_cli_says_how_much_it_probed_and_takes_all(three: Path):
    path = str(three)
    result = CliRunner().invoke(main, ["stats", "--cues", "--cue-sample", "10", path])
    assert result.exit_code == 0, result.output
    assert "redundancy 10 of 25" in result.output and "other categories whole" in result.output
    assert "total on a seeded sample of 10 of the 20 probed solutions with an error step" in result.output
    result = CliRunner().invoke(main, ["stats", "--cues", "--cue-sample", "all", "--json", path])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["cues"]["sample_per_category"] is None
    result = CliRunner().invoke(main, ["stats", "--cues", path])
    assert "every category whole; total on all 50 probed solutions with an error step" in result.output
    for bad in ("5", "some", "-1"):
        result = CliRunner().invoke(main, ["stats", "--cues", "--cue-sample", bad, path])
        assert result.exit_code == 2 and "--cue-sample" in result.output and "at least 10, or `all`" in result.output
        assert "Traceback" not in result.output


def test_a_cue_sample_without_cues_is_refused_not_ignored(three: Path):
    """`--cue-sample` sizes the probe `--cues` runs: given alone it did nothing, silently (exit 0)."""
    result = CliRunner().invoke(main, ["stats", "--cue-sample", "1000", str(three)])
    assert result.exit_code == 2 and "add --cues" in result.output
    assert CliRunner().invoke(main, ["stats", str(three)]).exit_code == 0
