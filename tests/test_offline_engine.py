"""The offline engine: every operator's output passes the validator, changes only what it declares, and is an
error of its category; same seed, same records; the README's main command works with no network."""
from __future__ import annotations

import asyncio
import json
import re

import pytest
from click.testing import CliRunner

from injector import OfflineEngine, Taxonomy, inject_one, load_trajectories
from injector.cli.commands import main
from injector.engines.base import NotApplicable
from injector.engines.offline import NUMBER, OPERATORS, WITHDRAWN_OPERATORS, split_answer
from injector.records.models import Candidate, Rejection

ENGINE = OfflineEngine()
# The operators for the bundled PRMBench taxonomy (numerical_calculation serves projudge; tested with it).
PRMBENCH_OPERATORS = sorted(c.id for c in Taxonomy.load().categories if c.id in OPERATORS)


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return Taxonomy.load()


@pytest.fixture(scope="module")
def trajectories():
    return list(load_trajectories())  # the bundled sample


def records_for(taxonomy, category_id, trajectories, seed=0, sample=0, output_mode="edits"):
    category = taxonomy.category(category_id)
    return [asyncio.run(inject_one(taxonomy, category, t, ENGINE, seed=seed, sample=sample, output_mode=output_mode))
            for t in trajectories]


def numbers(text: str) -> list[str]:
    return [m.group(0) for m in NUMBER.finditer(text)]


def unchanged_steps_are_original(candidate: Candidate) -> None:
    """The undeclared steps are original steps, verbatim and in order, and no original step is lost."""
    kept = [s for k, s in enumerate(candidate.modified_process, 1) if k not in candidate.modified_steps]
    remaining = iter(candidate.original_process)
    assert all(step in remaining for step in kept)  # an ordered subsequence of the original
    assert len(candidate.original_process) - len(kept) <= len(candidate.modified_steps)  # nothing deleted
    assert candidate.warnings == []


@pytest.mark.parametrize("category_id", PRMBENCH_OPERATORS)
def test_every_operator_passes_the_validator_and_changes_only_what_it_declares(taxonomy, trajectories,
                                                                              category_id):
    records = records_for(taxonomy, category_id, trajectories)
    candidates = [r for r in records if isinstance(r, Candidate)]
    rejects = [r for r in records if isinstance(r, Rejection)]
    assert candidates, f"{category_id}: no candidate on the bundled data"
    assert all(r.codes == ["not_applicable"] for r in rejects), [r.codes for r in rejects]
    for candidate in candidates:
        assert candidate.provenance.engine == "offline" and candidate.provenance.details["operator"]
        unchanged_steps_are_original(candidate)
        assert_error_of_category(category_id, candidate)


def assert_error_of_category(category_id: str, c: Candidate) -> None:
    errors = [c.modified_process[k - 1] for k in c.error_steps]
    if category_id == "step_contradiction" and len(c.modified_process) not in c.error_steps:
        # A local contradiction (issue 25): the conflicting step alone, the later steps and the answer as they were.
        [k] = c.error_steps
        assert c.modified_steps == [k] and c.modified_process[k:] == c.original_process[k:]
    elif category_id in ("counterfactual", "step_contradiction"):
        # The error propagates (issue 15): every changed step is an error step, and the error reaches the answer;
        # what makes it an error of its category is checked in tests/semantic_checks/.
        assert c.error_steps == c.modified_steps and len(c.modified_process) in c.error_steps
        assert split_answer(c.modified_process[-1])[1] != split_answer(c.original_process[-1])[1]
    elif category_id == "confidence":
        # A false value, carried to the final answer; certainty also on a correct step (a declared non-error edit).
        first = min(c.error_steps)
        assert set(c.error_steps) <= set(c.modified_steps) and c.modified_process[first - 1] not in c.original_process
        assert set(c.modified_steps) - set(c.error_steps), "no correct step carries certainty"
        assert split_answer(c.modified_process[-1])[1] != split_answer(c.original_process[-1])[1]
    elif category_id == "redundancy":
        # Inserted steps only: without them the solution is the original; no re-check cue words.
        assert c.error_steps == c.modified_steps
        assert [s for k, s in enumerate(c.modified_process, 1) if k not in c.error_steps] == c.original_process
        assert not re.search(r"\b(?:check|again|verify|note|restating|indeed)\b", " ".join(errors), re.I)
    elif category_id == "circular_logic":
        # The deriving step is replaced by an assumption, and one or two inserted steps lean on it (the loop in
        # two or three steps); same final answer.
        first = c.error_steps[0]
        assert c.error_steps in ([first, first + 1], [first, first + 1, first + 2])
        assert c.modified_steps == c.error_steps
        assert len(c.modified_process) == len(c.original_process) + len(c.error_steps) - 1
        assert c.original_process[first - 1] not in c.modified_process
        assert c.modified_process[-1] == c.original_process[-1]
    elif category_id == "missing_condition":
        # Either the question changed and the solution is kept (its steps flagged), or a \pm was dropped; a
        # given number is never deleted from the question (tests/semantic_checks/missing_condition.py checks more).
        if c.modified_question != c.original_question:
            assert c.modified_steps == [] and all(n in numbers(c.modified_question)
                                                  for n in numbers(c.original_question))
        else:
            [k] = c.error_steps
            assert "\\pm" in c.original_process[k - 1] and not re.search(r"\\pm(?![A-Za-z])", errors[0])


@pytest.mark.parametrize("category_id", PRMBENCH_OPERATORS)
def test_full_mode_gives_the_same_candidates(taxonomy, trajectories, category_id):
    fields = ("modified_question", "modified_process", "modified_steps", "error_steps", "reason")

    def labels(records):
        return [{f: getattr(r, f) for f in fields} if isinstance(r, Candidate) else r.codes for r in records]

    edits = records_for(taxonomy, category_id, trajectories)
    full = records_for(taxonomy, category_id, trajectories, output_mode="full")
    assert labels(edits) == labels(full)
    assert {r.provenance.output_mode for r in full if isinstance(r, Candidate)} == {"full"}


def test_same_seed_same_records_other_seed_differs(taxonomy, trajectories):
    def strip_time(records):
        return [r.model_dump(exclude={"provenance"}) | {"p": r.provenance.model_dump(exclude={"time"})} for r in records]

    for category_id in PRMBENCH_OPERATORS:
        first = strip_time(records_for(taxonomy, category_id, trajectories, seed=3))
        again = strip_time(records_for(taxonomy, category_id, trajectories, seed=3))
        assert first == again
    a = [getattr(r, "modified_process", None) for r in records_for(taxonomy, "redundancy", trajectories, seed=0)]
    b = [getattr(r, "modified_process", None) for r in records_for(taxonomy, "redundancy", trajectories, seed=1)]
    assert a != b


def test_samples_are_different_until_the_trajectory_runs_out(taxonomy, trajectories):
    trajectory = trajectories[0]
    category = taxonomy.category("redundancy")
    options = len(OPERATORS["redundancy"](trajectory))
    perturbations = [ENGINE.perturb(trajectory, category, seed=0, sample=k) for k in range(options)]
    assert len({json.dumps(p.edits) for p in perturbations}) == options > 1
    with pytest.raises(NotApplicable):
        ENGINE.perturb(trajectory, category, seed=0, sample=options)


def test_not_applicable_when_nothing_to_work_on(taxonomy):
    from injector import Trajectory

    plain = Trajectory(id="p", question="Is a square a rectangle?", steps=["Yes, by definition."], answer=None)
    for category_id in PRMBENCH_OPERATORS:
        [record] = records_for(taxonomy, category_id, [plain])
        assert isinstance(record, Rejection) and record.codes == ["not_applicable"]
        assert "found nothing to work on" in record.messages[0]


def test_readme_main_command_runs_offline(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("INJECT_MODEL", raising=False)
    result = CliRunner().invoke(main, ["run", "--category", "circular_logic"])
    assert result.exit_code == 0, result.output
    assert "using the offline rule-based engine" in result.output
    [run_dir] = list((tmp_path / "runs").iterdir())
    candidates = [json.loads(line) for line in (run_dir / "candidates.jsonl").read_text().splitlines()]
    rejects = [json.loads(line) for line in (run_dir / "rejects.jsonl").read_text().splitlines()]
    # Every bundled trajectory is tried once: a candidate, or not_applicable where no loop fits it.
    assert candidates and len(candidates) + len(rejects) == 30
    assert {c["classification"] for c in candidates} == {"circular"}
    assert {code for r in rejects for code in r["codes"]} <= {"not_applicable"}


def test_model_categories_exit_2_alone_and_are_skipped_with_all(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", "--category", "deception", "--model", "offline"])
    assert result.exit_code == 2
    assert "pass --model with an LLM" in result.output and "deception" in result.output
    result = CliRunner().invoke(main, ["run", "--category", "all", "--model", "offline", "--limit", "2",
                                       "--out", "r"])
    assert result.exit_code == 0, result.output
    assert "skipping deception:" in result.output and "skipping multi_solution:" in result.output
    assert "skipping domain_inconsistency:" in result.output
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert set(manifest["skipped_categories"]) == {"deception", "multi_solution", "domain_inconsistency",
                                                   "missing_condition", "step_contradiction", "confidence",
                                                   "counterfactual"}
    assert "deception" not in manifest["config"]["categories"]


@pytest.mark.parametrize("category", ["step_contradiction", "confidence", "counterfactual"])
def test_a_withdrawn_category_is_refused_with_its_reason_and_stays_for_custom_use(tmp_path, monkeypatch, category):
    """Issue 25: a category whose items carry a cue above PRMBench's GPT-4o data's is withdrawn, not shipped."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["run", "--category", category, "--model", "offline"])
    assert result.exit_code == 2
    assert "withdrawn from the offline engine" in result.output and "docs/offline-engine-quality.md" in result.output
    assert not (tmp_path / "runs").exists()
    taxonomy = Taxonomy.load()
    engine = OfflineEngine(operators=WITHDRAWN_OPERATORS)
    records = [asyncio.run(inject_one(taxonomy, taxonomy.category(category), trajectory, engine))
               for trajectory in list(load_trajectories())[:10]]
    assert any(isinstance(record, Candidate) and record.category == category for record in records)
