"""What a received run directory may make the toolkit do (nothing that runs its code), and taxonomy files that
symlink out of their directory (refused). See SECURITY.md."""
from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import Taxonomy, Trajectory, render_messages
from injector.cli.commands import main
from injector.util.errors import UserError
from injector.taxonomy.hooks import load_hook
from injector.curate.review.session import ReviewSession
from injector.curate.review.store import Decision, ReviewStore
from injector.curate.stats import compute_stats
from injector.taxonomy import run_taxonomy
from test_review import candidate

TRAJECTORY = Trajectory(id="t", question="What is $2 + 3$?",
                        steps=["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"], answer="5")
TEMPLATE = '{% extends "_base.j2" %}{% block guidance %}Make a unit slip.{% endblock %}'
# A hook that leaves a marker when imported or called: any trace of it means the run directory ran code.
HOOK = """
from pathlib import Path
MARKER = Path({marker!r})
MARKER.write_text("imported")

class Check:
    def check(self, trajectory, verdict):
        MARKER.write_text("called")
        return []
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def custom_taxonomy(directory: Path, marker: Path, *, name: str = "mine") -> Path:
    """A taxonomy with a hooked category `slip` (a counterfactual-like error that may sit on an unchanged step)."""
    write(directory / "checks.py", HOOK.format(marker=str(marker)))
    write(directory / "prompts" / "slip.j2", TEMPLATE)
    return write(directory / "taxonomy.yaml", f"""
        name: {name}
        categories:
          - id: slip
            name: Unit Slip
            definition: State a result in the wrong unit.
            domain: units
            template: prompts/slip.j2
            hook: checks.py:Check
            rules: {{allow_error_on_unchanged_step: true}}
        """)


def received_run(directory: Path, taxonomy_path: str, name: str = "mine") -> Path:
    """A run directory as a collaborator sends it: candidates and a manifest naming their taxonomy."""
    directory.mkdir(parents=True, exist_ok=True)
    record = candidate("t1::slip::0", "slip")
    (directory / "candidates.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    manifest = {"config": {"taxonomy": name, "taxonomy_path": taxonomy_path},
                "categories": {"slip": {"name": "Unit Slip (as run)", "domain": "units"}}, "status": "finished"}
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return directory


@pytest.fixture
def marker(tmp_path: Path) -> Path:
    return tmp_path / "hook-ran"


@pytest.fixture(params=["absolute", "relative"])
def run_dir(request: pytest.FixtureRequest, tmp_path: Path, marker: Path) -> Path:
    """The run's taxonomy travels inside the run directory, named by its absolute path (as `inject run` writes
    it) or by a path relative to the run directory."""
    run = tmp_path / "received"
    path = custom_taxonomy(run / "taxonomy", marker)
    return received_run(run, str(path) if request.param == "absolute" else "taxonomy/taxonomy.yaml")


# --- 1. a run directory never runs code ------------------------------------------------------------------------


def test_review_correction_does_not_run_the_runs_hook(run_dir: Path, marker: Path) -> None:
    session = ReviewSession([run_dir])
    # marking unchanged step 1 as well is allowed only by the run's own rules: they are applied, its hook is not
    decision = session.decide("0/t1::slip::0", {"decision": "accept", "corrected_error_steps": [1, 2]})
    assert decision.corrected_error_steps == [1, 2]
    assert not marker.exists()
    assert "hook checks of slip were skipped" in session.runs[0].taxonomy_note
    assert f"--taxonomy {(run_dir / 'taxonomy' / 'taxonomy.yaml')}" in session.runs[0].taxonomy_note


def test_review_with_taxonomy_named_on_the_command_line_runs_its_hook(run_dir: Path, marker: Path) -> None:
    session = ReviewSession([run_dir], taxonomy=run_dir / "taxonomy" / "taxonomy.yaml")
    session.decide("0/t1::slip::0", {"decision": "accept", "corrected_error_steps": [1, 2]})
    assert marker.read_text() == "called"
    assert session.runs[0].taxonomy_note == ""


def test_review_import_says_once_that_hooks_were_skipped(run_dir: Path, marker: Path, tmp_path: Path) -> None:
    decisions = tmp_path / "decisions.jsonl"
    decisions.write_text(json.dumps({"id": "t1::slip::0", "decision": "accept", "corrected_error_steps": [1, 2],
                                     "reason": "", "reviewer": "ana", "time": "2026-01-01T00:00:00Z"}) + "\n")
    second = received_run(tmp_path / "second", "../received/taxonomy/taxonomy.yaml")
    (second / "candidates.jsonl").write_text(json.dumps(candidate("t2::slip::0", "slip")) + "\n")
    result = CliRunner().invoke(main, ["review", str(run_dir), str(second), "--import", str(decisions)])
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    assert result.stderr.count("hook checks of slip were skipped") == 1  # once, though two runs share it
    assert "pass --taxonomy" in result.stderr
    assert ReviewStore(run_dir).latest()["t1::slip::0"].corrected_error_steps == [1, 2]


def test_manifest_paths_resolve_against_the_run_directory_not_the_current_one(
        tmp_path: Path, marker: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = tmp_path / "run"
    custom_taxonomy(run, marker, name="run_own")
    received_run(run, "taxonomy.yaml", name="run_own")
    elsewhere = tmp_path / "cwd"
    custom_taxonomy(elsewhere, marker, name="cwd_one")
    monkeypatch.chdir(elsewhere)
    taxonomy, _ = run_taxonomy(run)
    assert taxonomy.name == "run_own" and taxonomy.path == (run / "taxonomy.yaml").resolve()


def test_a_bundled_taxonomy_from_another_machine_is_the_bundled_one(tmp_path: Path) -> None:
    run = received_run(tmp_path / "run", "/home/someone/site-packages/injector/bundled/taxonomy.yaml",
                       name="projudge")
    taxonomy, note = run_taxonomy(run)
    assert taxonomy.name == "projudge" and note == ""
    assert taxonomy.path == Taxonomy.load("projudge").path


def test_a_missing_custom_taxonomy_falls_back_to_the_bundled_one_and_says_so(tmp_path: Path) -> None:
    run = received_run(tmp_path / "run", "/nowhere/taxonomy.yaml")
    taxonomy, note = run_taxonomy(run)
    assert taxonomy.name == "prmbench"
    assert "'/nowhere/taxonomy.yaml'" in note and "is not here" in note and "--taxonomy PATH" in note


@pytest.mark.parametrize("recorded", ["x" * 5000 + "/taxonomy.yaml", "loop.yaml", "bad\x00name.yaml", "."])
def test_a_hostile_manifest_path_is_a_note_not_a_crash(tmp_path: Path, recorded: str) -> None:
    run = received_run(tmp_path / "run", recorded)
    os.symlink("loop.yaml", run / "loop.yaml")  # a link to itself
    taxonomy, note = run_taxonomy(run)
    assert taxonomy.name == "prmbench" and "is not here: using the bundled one" in note


def test_an_unreadable_run_taxonomy_is_a_note_not_a_crash(tmp_path: Path, marker: Path) -> None:
    run = tmp_path / "run"
    path = custom_taxonomy(run, marker)
    os.symlink("loop.j2", run / "prompts" / "loop.j2")
    path.write_text(path.read_text().replace("prompts/slip.j2", "prompts/loop.j2"))
    received_run(run, "taxonomy.yaml")
    taxonomy, note = run_taxonomy(run)
    assert taxonomy.name == "prmbench" and "categories.slip.template: 'prompts/loop.j2' cannot be resolved" in note
    path.write_bytes(b"name: \xff\xfe\n")
    taxonomy, note = run_taxonomy(run)
    assert taxonomy.name == "prmbench" and "could not be loaded" in note


def test_rules_only_taxonomy_runs_no_python_checks(tmp_path: Path, marker: Path) -> None:
    path = custom_taxonomy(tmp_path, marker)
    (tmp_path / "prompts" / "slip.j2").unlink()  # a run directory may carry the YAML alone
    with pytest.raises(UserError, match="categories.slip.template: .* not found"):
        Taxonomy.load(path)
    taxonomy = Taxonomy.load(path, rules_only=True)
    assert taxonomy.category("slip").rules.allow_error_on_unchanged_step
    category = taxonomy.category("slip")
    category.check = lambda trajectory, verdict: [("python_check", "ran")]
    category.context = lambda trajectory: {"ran": True}
    assert category.loaded_hook() is None
    assert category.extra_checks(TRAJECTORY, None) == [] and category.extra_context(TRAJECTORY) == {}
    assert not marker.exists()


def test_build_and_stats_do_not_run_the_runs_hook(run_dir: Path, marker: Path, tmp_path: Path) -> None:
    ReviewStore(run_dir).record(Decision("t1::slip::0", "accept", "", [1, 2], {1: "Changed first step."},
                                         time="2026-01-01T00:00:00Z"))
    result = CliRunner().invoke(main, ["build", str(run_dir), "--out", str(tmp_path / "split")])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["stats", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    assert not marker.exists()
    assert json.loads(result.stdout)["categories"]["slip"]["name"] == "Unit Slip (as run)"  # the manifest's


def test_build_and_stats_name_categories_from_the_taxonomy_given(run_dir: Path, tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    custom_taxonomy(mine, tmp_path / "unused-marker")
    (mine / "taxonomy.yaml").write_text((mine / "taxonomy.yaml").read_text().replace("Unit Slip", "Renamed Slip"))
    result = CliRunner().invoke(main, ["build", str(run_dir), "--out", str(tmp_path / "split"),
                                       "--include-unreviewed", "--taxonomy", str(mine / "taxonomy.yaml")])
    assert result.exit_code == 0, result.output
    row = json.loads((tmp_path / "split" / "jsonl" / "slip.jsonl").read_text().splitlines()[0])
    assert row["category_name"] == "Renamed Slip" and row["domain"] == "units"
    assert compute_stats(run_dir, taxonomy=mine / "taxonomy.yaml")["categories"]["slip"]["name"] == "Renamed Slip"
    assert compute_stats(tmp_path / "split")["categories"]["slip"]["name"] == "Renamed Slip"  # the split's rows


# --- 12. symlinks out of the taxonomy directory are refused ---------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the taxonomy's, holding files a link must not reach."""
    directory = tmp_path / "outside"
    write(directory / "secret.txt", "SECRET-CONTENT")
    write(directory / "evil.py", "raise SystemExit('outside hook imported')\n")
    write(directory / "evil.j2", TEMPLATE)
    return directory


def test_a_template_symlinked_outside_is_refused(tmp_path: Path, marker: Path, outside: Path) -> None:
    path = custom_taxonomy(tmp_path / "tax", marker)
    (tmp_path / "tax" / "prompts" / "slip.j2").unlink()
    os.symlink(outside / "evil.j2", tmp_path / "tax" / "prompts" / "slip.j2")
    with pytest.raises(UserError) as caught:
        Taxonomy.load(path)
    message = str(caught.value)
    assert str(path) in message and "categories.slip.template: 'prompts/slip.j2' resolves" in message
    assert str(outside / "evil.j2") in message and "outside the taxonomy's directory" in message


def test_an_examples_file_symlinked_outside_is_refused(tmp_path: Path, marker: Path, outside: Path) -> None:
    """Worked examples go into every prompt: a link to a file elsewhere would send that file to the model."""
    path = custom_taxonomy(tmp_path / "tax", marker)
    (outside / "secret.yaml").write_text("- the contents of a private file\n", encoding="utf-8")
    os.symlink(outside / "secret.yaml", tmp_path / "tax" / "examples.yaml")
    path.write_text(path.read_text(encoding="utf-8") + "    examples: examples.yaml\n", encoding="utf-8")
    with pytest.raises(UserError) as caught:
        Taxonomy.load(path)
    message = str(caught.value)
    assert "categories.slip.examples: 'examples.yaml' resolves" in message
    assert str(outside / "secret.yaml") in message and "outside the taxonomy's directory" in message


def test_a_hook_symlinked_outside_is_refused(tmp_path: Path, marker: Path, outside: Path) -> None:
    path = custom_taxonomy(tmp_path / "tax", marker)
    (tmp_path / "tax" / "checks.py").unlink()
    os.symlink(outside / "evil.py", tmp_path / "tax" / "checks.py")
    with pytest.raises(UserError, match=r"categories\.slip\.hook: 'checks\.py:Check' resolves .*evil\.py"):
        Taxonomy.load(path)


def test_a_hook_relinked_after_loading_is_refused_at_import(tmp_path: Path, marker: Path, outside: Path) -> None:
    taxonomy = Taxonomy.load(custom_taxonomy(tmp_path / "tax", marker))
    (tmp_path / "tax" / "checks.py").unlink()
    os.symlink(outside / "evil.py", tmp_path / "tax" / "checks.py")
    with pytest.raises(UserError, match=r"checks\.py resolves .*evil\.py, outside the taxonomy's directory"):
        taxonomy.category("slip").loaded_hook()
    with pytest.raises(UserError, match="outside the taxonomy's directory"):
        load_hook(f"{tmp_path / 'tax' / 'checks.py'}:Check", (tmp_path / "tax",))


@pytest.mark.parametrize("tag", ["include", "extends"])
def test_an_include_or_extends_symlinked_outside_is_refused(tmp_path: Path, marker: Path, outside: Path,
                                                           tag: str) -> None:
    path = custom_taxonomy(tmp_path / "tax", marker)
    os.symlink(outside / "secret.txt", tmp_path / "tax" / "prompts" / "_part.j2")
    text = ('{% extends "_part.j2" %}' if tag == "extends" else
            '{% extends "_base.j2" %}{% block guidance %}{% include "_part.j2" %}{% endblock %}')
    (tmp_path / "tax" / "prompts" / "slip.j2").write_text(text)
    taxonomy = Taxonomy.load(path, rules_only=True)
    with pytest.raises(UserError) as caught:
        render_messages(taxonomy, taxonomy.category("slip"), TRAJECTORY)
    message = str(caught.value)
    assert "_part.j2" in message and str(outside / "secret.txt") in message and "SECRET" not in message


def test_the_template_hash_never_reads_a_shared_template_linked_outside(tmp_path: Path, marker: Path,
                                                                         outside: Path) -> None:
    taxonomy = Taxonomy.load(custom_taxonomy(tmp_path / "tax", marker))
    before = taxonomy.template_hash(taxonomy.category("slip"))
    os.symlink(outside / "secret.txt", tmp_path / "tax" / "prompts" / "_secret.j2")
    taxonomy = Taxonomy.load(tmp_path / "tax" / "taxonomy.yaml")
    assert taxonomy.template_hash(taxonomy.category("slip")) == before


def test_links_inside_the_taxonomy_and_to_the_bundled_prompts_still_work(tmp_path: Path, marker: Path) -> None:
    from injector.util.resources import bundled_prompts_dir

    path = custom_taxonomy(tmp_path / "tax", marker)
    write(tmp_path / "tax" / "shared" / "guidance.txt", "Shared guidance.")
    os.symlink(tmp_path / "tax" / "shared" / "guidance.txt", tmp_path / "tax" / "prompts" / "_part.j2")
    os.symlink(bundled_prompts_dir() / "_base.j2", tmp_path / "tax" / "prompts" / "_linked_base.j2")
    (tmp_path / "tax" / "prompts" / "slip.j2").write_text(
        '{% extends "_linked_base.j2" %}{% block guidance %}{% include "_part.j2" %}{% endblock %}')
    taxonomy = Taxonomy.load(path, rules_only=True)
    system, _ = render_messages(taxonomy, taxonomy.category("slip"), TRAJECTORY)
    assert "Shared guidance." in system["content"]
