"""The bundled `projudge` taxonomy: ProJudgeBench's six injectable error types, every error step explained.

Checks that the taxonomy loads with its six categories and rules; that every category renders in both output modes,
for a text trajectory and for one with an image and a subject; that the prompts ask for an explanation of every
error step; that every worked example obeys the output contract, explains every error step, and that its edit form
reproduces its full form (checked here and by the toolkit's own validator); and that `inject taxonomy validate
projudge` passes.

Snapshots of the rendered prompts live in tests/snapshots/projudge/<category id>.txt (full mode) and
<category id>.edits.txt (edit mode). After an intended change: UPDATE_SNAPSHOTS=1 pytest tests/test_projudge_taxonomy.py
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from snapshots import assert_snapshot
from click.testing import CliRunner

from injector.cli.commands import main
from injector.inject.prompts import render_messages
from injector.taxonomy import Taxonomy
from injector.model.trajectory import Trajectory
from test_prompts import output_section, parse_trajectory_block

TAXONOMY = Taxonomy.load("projudge")
CATEGORY_IDS = [category.id for category in TAXONOMY.categories]
MODES = ["full", "edits"]
SNAPSHOT_DIR = Path(__file__).parent / "snapshots" / "projudge"
SUBJECTS = {"math", "physics", "chemistry", "biology"}

EXPECTED = {
    "numerical_calculation": ("Numerical Calculation Error", "computation"),
    "symbolic_calculation": ("Symbolic Calculation Error", "computation"),
    "visual_interpretation": ("Visual Interpretation Error", "perception"),
    "reasoning": ("Reasoning Error", "reasoning"),
    "knowledge": ("Knowledge Error", "knowledge"),
    "question_understanding": ("Question Understanding Error", "comprehension"),
}

TEXT = Trajectory(
    id="test:text",
    question="A train covers $120$ km in $1.5$ hours. What is its average speed in km/h?",
    steps=["The average speed is distance divided by time.", "So $v = \\frac{120}{1.5} = 80$ km/h."],
)
IMAGE = Trajectory(
    id="test:image",
    question="The figure shows a circuit with a $12$ V battery and two resistors. What current flows?",
    steps=[
        "The two resistors, $4\\ \\Omega$ and $2\\ \\Omega$, are in series in the figure.",
        "The total resistance is $4 + 2 = 6\\ \\Omega$.",
        "By Ohm's law, $I = \\frac{12}{6} = 2$ A.",
    ],
    images=["fig.png"],
    subject="physics",
)


def render(category_id: str, trajectory: Trajectory = TEXT, mode: str = "full") -> tuple[str, str]:
    # Images are left out of the messages here (fig.png does not exist); test_image_parts_follow_the_text attaches one.
    messages = render_messages(TAXONOMY, TAXONOMY.category(category_id), trajectory, output_mode=mode,
                               attach_images=False)
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[0]["content"], messages[1]["content"]


# --- the taxonomy ----------------------------------------------------------------------------------------------

def test_the_taxonomy_has_the_six_projudge_categories() -> None:
    assert TAXONOMY.name == "projudge"
    assert CATEGORY_IDS == list(EXPECTED)
    for category in TAXONOMY.categories:
        assert (category.name, category.domain) == EXPECTED[category.id]
        assert category.definition and category.error_steps and category.not_this
        assert category.prmbench_id is None and category.classification == category.id
        rules = category.rules
        assert rules.require_explanations is True
        assert rules.allow_question_edit is False and rules.allow_error_on_unchanged_step is False
        assert rules.multi_solution is False
        assert rules.requires_images is (category.id == "visual_interpretation")
    assert "No Solution Provided" not in {category.name for category in TAXONOMY.categories}


def test_the_taxonomy_loads_by_name_and_by_path() -> None:
    path = TAXONOMY.path
    assert path is not None and path.parts[-3:] == ("taxonomies", "projudge", "taxonomy.yaml")
    by_path = Taxonomy.load(path)
    assert [c.model_dump() for c in by_path.categories] == [c.model_dump() for c in TAXONOMY.categories]
    for category in TAXONOMY.categories:
        template = TAXONOMY.template_path(category)
        assert template == path.parent / "prompts" / f"{category.id}.j2" and template.is_file()


def test_taxonomy_validate_and_categories_cli() -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["taxonomy", "validate", "projudge"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["taxonomy", "validate", str(TAXONOMY.path)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(main, ["categories", "--taxonomy", "projudge"])
    assert result.exit_code == 0, result.output
    for category_id, (name, _) in EXPECTED.items():
        assert category_id in result.output and name in result.output


# --- rendering -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_every_category_renders_for_text_and_image_trajectories(category_id: str, mode: str) -> None:
    category = TAXONOMY.category(category_id)
    text_system, text_user = render(category_id, TEXT, mode)
    image_system, image_user = render(category_id, IMAGE, mode)
    assert text_system == image_system, "the system message must not depend on the trajectory"
    system = text_system
    for part in (category.definition, category.not_this, category.error_steps, category.name):
        assert part in system
    for leftover in ("{{", "{%", "{#"):
        assert leftover not in system and leftover not in image_user
    closing = "Answer with the JSON object {}only.".format("of your edits " if mode == "edits" else "")
    for trajectory, user in ((TEXT, text_user), (IMAGE, image_user)):
        assert trajectory.question not in system
        assert user.endswith(closing)
        assert parse_trajectory_block(user) == (trajectory.question, trajectory.steps, None)
        assert f"Inject one {category_id.replace('_', ' ')} error into these {len(trajectory.steps)} steps" in user
    assert image_user.startswith("Subject: physics\n\n<question>\n")
    assert "fig.png" in image_user
    assert "Subject:" not in text_user and "image" not in text_user


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_the_system_prompt_asks_for_explanations(category_id: str, mode: str) -> None:
    system, _ = render(category_id, mode=mode)
    output = output_section(system)
    if mode == "edits":
        assert '"explanation": str or null' in output
        assert "- `\"explanation\"`: required on every edit with `\"error\": true`" in output
        assert "It is optional." not in system
        assert "in each error edit's `explanation`, never in a step" in system
        assert "explanations" not in output
        for word in ("modified_question", "modified_process", "modified_steps", "error_steps", "byte-for-byte"):
            assert word not in system, f"{word!r} in the edit-mode system prompt"
    else:
        assert '"reason": str, "explanations": {str: str, ...}}' in output
        assert '`"explanations": {"<step>": "<why>"}`' in output
        assert "An error step without an explanation is rejected." in output
        assert "The explanations go in `reason` and in `explanations`, never in a step." in system
        assert '"op"' not in system
    assert "Never change the question" in system


def test_image_parts_follow_the_text(tmp_path: Path) -> None:
    figure = tmp_path / "fig.png"
    figure.write_bytes(b"\x89PNG\r\n\x1a\n")
    trajectory = IMAGE.model_copy(update={"images": [str(figure)]})
    messages = render_messages(TAXONOMY, TAXONOMY.category("visual_interpretation"), trajectory)
    content = messages[1]["content"]
    assert isinstance(content, list) and content[0]["type"] == "text"
    assert content[0]["text"].startswith("Subject: physics\n")
    assert [part["type"] for part in content[1:]] == ["image_url"]
    assert content[1]["image_url"]["url"].startswith("data:image/png;base64,")


def test_the_base_shows_the_subject_and_explanation_wording_for_any_taxonomy() -> None:
    prmbench = Taxonomy.load()
    plain = prmbench.category("counterfactual")
    explained = plain.model_copy(update={"rules": plain.rules.model_copy(update={"require_explanations": True})})
    subject = TEXT.model_copy(update={"subject": "chemistry"})
    for mode in MODES:
        system, user = (m["content"] for m in render_messages(prmbench, plain, subject, output_mode=mode))
        assert user.startswith("Subject: chemistry\n\n<question>\n")
        assert "It is optional." in system if mode == "edits" else "explanations" not in system
        system, _ = (m["content"] for m in render_messages(prmbench, explained, TEXT, output_mode=mode))
        assert ("required on every edit" if mode == "edits" else '"explanations": {"<step>": "<why>"}') in system


# --- worked examples -------------------------------------------------------------------------------------------
# The examples are data (taxonomies/projudge/prompts/examples/); tests/test_prompts.py validates every one of
# them with the real validator in both answer forms (explanations included) and checks propagation.

@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_two_examples_from_different_subjects_and_figures_only_where_the_category_needs_one(category_id) -> None:
    examples = TAXONOMY.category(category_id).examples
    assert len(examples) == 2 and len({example.subject for example in examples}) == 2
    assert all(example.subject in SUBJECTS for example in examples)
    assert all(bool(example.figure) == (category_id == "visual_interpretation") for example in examples)
    for mode in MODES:
        system, _ = render(category_id, mode=mode)
        assert [e.subject for e in examples] == re.findall(r"^Subject: (.*)$", system, re.M)
        assert system.count("The figure, in words:") == sum(bool(e.figure) for e in examples)


def test_the_examples_cover_all_four_subjects() -> None:
    subjects = [example.subject for category in TAXONOMY.categories for example in category.examples]
    assert set(subjects) == SUBJECTS
    assert max(subjects.count(s) for s in SUBJECTS) - min(subjects.count(s) for s in SUBJECTS) <= 1


# --- snapshots -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_rendered_prompt_matches_snapshot(category_id: str, mode: str) -> None:
    system, user = render(category_id, IMAGE, mode)
    text = f"=== system ===\n{system}\n=== user ===\n{user}\n"
    path = SNAPSHOT_DIR / (f"{category_id}.txt" if mode == "full" else f"{category_id}.{mode}.txt")
    assert_snapshot(text, path, "tests/test_projudge_taxonomy.py")
