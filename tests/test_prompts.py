"""The category prompts: static system part, verbatim trajectory, worked examples as checked data, snapshots.

Every prompt renders in two output modes: "full" (the model writes back the whole modified solution) and "edits"
(the model lists only its edits; the default, except for multi_solution, which is always "full"). The worked
examples are data; each one passes the real validator in both answer forms and follows the propagation rule.

Snapshots of every rendered prompt live in tests/snapshots/prompts/<category id>.txt (full mode) and
<category id>.edits.txt (edit mode) so that prompt changes show up in review. After an intended change, accept the
new text with: UPDATE_SNAPSHOTS=1 pytest tests/test_prompts.py
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from snapshots import assert_snapshot

from injector.answer.final import final_answer_of_steps
from injector.engines.base import Engine
from injector.util.errors import UserError
from injector.inject.examples import edit_form, example_problems, full_form
from injector.inject.prompts import render_messages
from injector.taxonomy import Category, Rules, Taxonomy
from injector.model.trajectory import Trajectory

TAXONOMY = Taxonomy.load()
CATEGORY_IDS = [category.id for category in TAXONOMY.categories]
INJECTED_IDS = [category.id for category in TAXONOMY.categories if not category.rules.multi_solution]
MODES = ["full", "edits"]
SNAPSHOT_DIR = Path(__file__).parent / "snapshots" / "prompts"


TRAJECTORY = Trajectory(
    id="test:snapshot",
    question="Let $f(x) = \\frac{x}{2} + 1$. What is $f(f(4))$?",
    steps=[
        "First, $f(4) = \\frac{4}{2} + 1 = 3$.",
        "Then $f(3) = \\frac{3}{2} + 1 = \\frac{5}{2}$.",
        "So $f(f(4)) = \\frac{5}{2}$.\n\n# Answer\n\n\\frac{5}{2}",
    ],
    answer="\\frac{5}{2}",
    images=["figures/graph.png"],
)
OTHER_TRAJECTORY = Trajectory(
    id="test:other",
    question="How many seconds are in 7.8 minutes?",
    steps=["There are $60$ seconds in a minute.", "So $7.8 \\cdot 60 = 468$.\n\n# Answer\n\n468"],
)


def render(category: Category, trajectory: Trajectory = TRAJECTORY, mode: str = "full") -> tuple[str, str]:
    # The image parts are tested in tests/test_images.py; here the text the template renders.
    messages = render_messages(TAXONOMY, category, trajectory, output_mode=mode, attach_images=False)
    assert [m["role"] for m in messages] == ["system", "user"]
    return messages[0]["content"], messages[1]["content"]


def parse_trajectory_block(text: str) -> tuple[str, list[str], str | None]:
    """The question, steps and known final answer as a prompt presents them (user message or worked example)."""
    question = re.search(r"<question>\n(.*?)\n</question>", text, re.S)
    steps = re.search(r"<steps>\n(.*?)\n</steps>", text, re.S)
    known = re.search(r"^Known final answer: (.*)$", text, re.M)
    assert question and steps, f"no <question>/<steps> block in:\n{text[:500]}"
    return question.group(1), json.loads(steps.group(1)), known.group(1) if known else None


def parse_examples(system: str) -> list[dict]:
    """Each worked example: its input trajectory and the answer JSON that follows `Answer:`."""
    chunks = re.split(r"^## Example \d+\n", system, flags=re.M)[1:]
    examples = []
    for chunk in chunks:
        question, steps, known = parse_trajectory_block(chunk)
        head, sep, answer_text = chunk.partition("\nAnswer:\n")
        assert sep, f"example without an `Answer:` line:\n{chunk[:300]}"
        # json.loads of the whole remainder: the answer must be exactly one JSON object, nothing after it.
        examples.append({"question": question, "steps": steps, "known": known, "answer": json.loads(answer_text)})
    return examples


def effective_mode(category: Category, mode: str) -> str:
    return "full" if category.rules.multi_solution else mode


def output_section(system: str) -> str:
    section = re.search(r"^# Output\n(.*?)^# Worked examples$", system, re.M | re.S)
    assert section, "no `# Output` section before `# Worked examples`"
    return section.group(1)


# --- rendering -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_every_category_renders(category_id: str, mode: str) -> None:
    category = TAXONOMY.category(category_id)
    system, user = render(category, mode=mode)
    assert category.definition in system
    assert category.not_this in system
    for leftover in ("{{", "{%", "{#"):
        assert leftover not in system, f"unrendered Jinja syntax {leftover!r} in the system prompt"
    assert TRAJECTORY.question not in system
    if effective_mode(category, mode) == "edits":
        assert user.endswith("Answer with the JSON object of your edits only.")
    else:
        assert user.endswith("Answer with the JSON object only.")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_system_message_is_static(category_id: str, mode: str) -> None:
    category = TAXONOMY.category(category_id)
    assert render(category, TRAJECTORY, mode)[0] == render(category, OTHER_TRAJECTORY, mode)[0]


@pytest.mark.parametrize("category_id", INJECTED_IDS)
def test_edit_mode_asks_for_edits(category_id: str) -> None:
    category = TAXONOMY.category(category_id)
    system, _ = render(category, mode="edits")
    output = output_section(system)
    assert "edits" in output and '"op"' in output
    for op in ("replace", "insert"):
        assert f'"op": "{op}"' in output
    assert ('"op": "delete"' in output) == category.rules.allow_deletions
    assert ('"op": "flag"' in output) == bool(category.rules.allow_error_on_unchanged_step)
    assert "null" in output  # keys that do not apply may be null, as the strict schema sends them
    # No word of the full contract survives in edit mode (the guidance blocks included).
    for word in ("modified_question", "modified_process", "modified_steps", "error_steps", "byte-for-byte"):
        assert word not in system, f"{word!r} in the edit-mode system prompt"
    full_system, _ = render(category, mode="full")
    assert '"op"' not in full_system and "modified_process" in output_section(full_system)


def test_edit_mode_is_the_default_and_multi_solution_is_always_full() -> None:
    for category in TAXONOMY.categories:
        default = render_messages(TAXONOMY, category, TRAJECTORY, attach_images=False)
        assert default == render_messages(TAXONOMY, category, TRAJECTORY, output_mode="edits", attach_images=False)
        full = render_messages(TAXONOMY, category, TRAJECTORY, output_mode="full", attach_images=False)
        assert (default == full) == category.rules.multi_solution, category.id
    with pytest.raises(UserError, match="output mode"):
        render_messages(TAXONOMY, TAXONOMY.category("redundancy"), TRAJECTORY, output_mode="diff")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_user_message_presents_the_trajectory_exactly(category_id: str, mode: str) -> None:
    _, user = render(TAXONOMY.category(category_id), mode=mode)
    assert TRAJECTORY.question in user
    for step in TRAJECTORY.steps:
        assert json.dumps(step, ensure_ascii=False) in user
    assert parse_trajectory_block(user) == (TRAJECTORY.question, TRAJECTORY.steps, TRAJECTORY.answer)
    assert "figures/graph.png" in user
    _, user_without_answer = render(TAXONOMY.category(category_id), OTHER_TRAJECTORY, mode)
    assert "Known final answer" not in user_without_answer
    assert "image" not in user_without_answer


def test_template_syntax_in_the_data_comes_through_verbatim() -> None:
    trajectory = Trajectory(
        id="test:jinja",
        question="Is {{ 7*7 }} a square? {% if x %}yes{% endif %}",
        steps=["We check {# c #} first.", "Yes, $7^2$.\n\n# Answer\n\nyes"],
    )
    for category in TAXONOMY.categories:
        for mode in MODES:
            _, user = render(category, trajectory, mode)
            assert trajectory.question in user
            assert "{# c #}" in user
            assert "49" not in user
            assert parse_trajectory_block(user)[:2] == (trajectory.question, trajectory.steps)


def test_wording_follows_the_rules_flags() -> None:
    base = TAXONOMY.category("redundancy")
    strict = base.model_copy(update={"rules": Rules(allow_deletions=False)})
    loose = base.model_copy(
        update={"rules": Rules(allow_question_edit=True, allow_error_on_unchanged_step=True)}
    )
    strict_system, _ = render(strict)
    loose_system, _ = render(loose)
    assert "Never change the question" in strict_system
    assert "Never delete a step" in strict_system
    assert "Each of them must also be in modified_steps." in strict_system
    assert "You may change the question" in loose_system
    assert "An error step may be a step you left unchanged" in loose_system
    extra = base.model_copy(update={"label_leak_phrases": ["as planted"]})
    assert '"as planted"' in render(extra)[0]

    strict_edits, _ = render(strict, mode="edits")
    loose_edits, _ = render(loose, mode="edits")
    assert "Never change the question: set `question` to null." in strict_edits
    assert "Never delete a step" in strict_edits
    assert '"op": "delete"' not in strict_edits and '"op": "flag"' not in strict_edits
    assert "At most one replace per step" in strict_edits
    assert "a step you do not edit cannot be an error step" in strict_edits
    assert "You may change the question" in loose_edits
    assert '"op": "flag"' in loose_edits and '"op": "delete"' in loose_edits
    assert "At most one replace, delete or flag per step" in loose_edits
    assert "or a flag when it is a step you leave unchanged" in loose_edits
    assert '"as planted"' in render(extra, mode="edits")[0]


# --- worked examples ---------------------------------------------------------------------------------------------
# The examples are data (the `examples` of each category, in prompts/examples/); the prompt renders them in the
# answer form of its output mode. They are checked by the real parser and validator (injector/inject/examples.py), not by
# a copy of the rules here.

PROJUDGE = Taxonomy.load("projudge")
ALL_CATEGORIES = [(TAXONOMY, c.id) for c in TAXONOMY.categories] + [(PROJUDGE, c.id) for c in PROJUDGE.categories]


@pytest.mark.parametrize(("taxonomy", "category_id"), ALL_CATEGORIES,
                         ids=[f"{t.name}-{c}" for t, c in ALL_CATEGORIES])
def test_every_bundled_example_passes_the_validator_in_both_forms_and_propagates(taxonomy, category_id) -> None:
    category = taxonomy.category(category_id)
    assert category.examples, f"{category_id} has no worked example"
    for number, example in enumerate(category.examples, 1):
        assert example_problems(taxonomy, category, example) == [], f"{category_id} example {number}"


@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_every_category_has_a_long_example_with_attribution(category_id: str) -> None:
    long = [e for e in TAXONOMY.category(category_id).examples if len(e.steps) >= 9]
    assert long, f"{category_id}: no worked example of 9 steps or more"
    # Adapted from PRMBench: its licence; else written for this toolkit (never a train-phase-1 problem).
    assert all(("PRMBench" in e.source and "Apache-2.0" in e.source) or e.source == "Written for prm-injector."
               for e in long)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_the_prompt_shows_the_examples_as_data_in_the_answer_form_of_its_mode(category_id: str, mode: str) -> None:
    category = TAXONOMY.category(category_id)
    shown = parse_examples(render(category, mode=mode)[0])
    form = edit_form if effective_mode(category, mode) == "edits" else full_form
    assert shown == [{"question": e.question, "steps": e.steps, "known": final_answer_of_steps(e.steps),
                      "answer": form(category, e)} for e in category.examples]


def test_the_edit_form_carries_explanations_and_a_question_edit() -> None:
    category = PROJUDGE.category("knowledge")
    example = category.examples[0]
    edits = edit_form(category, example)["edits"]
    errors = [edit for edit in edits if edit.get("error") or edit["op"] == "flag"]
    assert errors and all(edit["explanation"] for edit in errors)
    trap = TAXONOMY.category("deception").examples[0]
    answer = edit_form(TAXONOMY.category("deception"), trap)
    assert answer["question"] == trap.answer.modified_question != trap.question
    assert {edit["op"] for edit in answer["edits"]} == {"flag"}


def _broken(category_id: str, **changes) -> list[str]:
    category = TAXONOMY.category(category_id)
    example = category.examples[0].model_copy(deep=True)
    for key, value in changes.items():
        setattr(example.answer, key, value)
    return example_problems(TAXONOMY, category, example)


@pytest.mark.parametrize(("category_id", "changes", "expected"), [
    ("counterfactual", {"error_steps": [3, 4]}, "error_on_unchanged_step"),
    ("counterfactual", {"error_steps": []}, "no_error_steps"),
    ("counterfactual", {"modified_question": "Another question?"}, "question_edit_not_allowed"),
    ("counterfactual", {"error_steps": [40]}, "index_out_of_range"),
    ("redundancy", {"modified_process": ["A wrong step.", "So the answer is 1.\n\n# Answer\n\n1"]},
     "answer_changed"),
    ("step_contradiction", {"modified_process": None}, "the last step does not change"),
    ("deception", {"modified_question": None}, "error_on_unchanged_step"),
    ("multi_solution", {"modified_process": ["So it is 1.\n\n# Answer\n\n1"]}, "answer_mismatch"),
])
def test_a_broken_example_fails_with_the_validators_message(category_id: str, changes: dict, expected: str) -> None:
    if changes.get("modified_process", "") is None:  # keep the error but undo its propagation to the last step
        example = TAXONOMY.category(category_id).examples[0]
        changes = {"modified_process": [*example.answer.modified_process[:-1], example.steps[-1]],
                   "error_steps": [k for k in example.answer.error_steps if k < len(example.steps)]}
    problems = _broken(category_id, **changes)
    assert any(expected in problem for problem in problems), problems


# --- snapshots -------------------------------------------------------------------------------------------------

SNAPSHOT_CASES = [(category_id, "full") for category_id in CATEGORY_IDS] + [
    (category_id, "edits") for category_id in INJECTED_IDS  # multi_solution renders the same in both modes
]


@pytest.mark.parametrize(("category_id", "mode"), SNAPSHOT_CASES)
def test_rendered_prompt_matches_snapshot(category_id: str, mode: str) -> None:
    system, user = render(TAXONOMY.category(category_id), mode=mode)
    text = f"=== system ===\n{system}\n=== user ===\n{user}\n"
    path = SNAPSHOT_DIR / (f"{category_id}.txt" if mode == "full" else f"{category_id}.{mode}.txt")
    assert_snapshot(text, path, "tests/test_prompts.py")


# --- step labels -----------------------------------------------------------------------------------------------

LABELLED = Trajectory(id="test:labelled", question="What is $2 + 3$?",
                      steps=["Step 1: Let $x = 2$.", "Step 2: Then $x + 3 = 5$.", "Step 3: So 5.\n\n# Answer\n\n5"])


@pytest.mark.parametrize(("steps", "shown"), [
    (LABELLED.steps, ["Let $x = 2$.", "Then $x + 3 = 5$.", "So 5.\n\n# Answer\n\n5"]),
    (["1. Let $x = 2$.", "2. Then $x + 3 = 5$."], ["Let $x = 2$.", "Then $x + 3 = 5$."]),
    # Partly labelled, mixed styles, or a number that is no label: left alone.
    (["Step 1: Let $x = 2$.", "Then $x + 3 = 5$."], None),
    (["Step 1: Let $x = 2$.", "2. Then $x + 3 = 5$."], None),
    (["3.5 is the price.", "2. So it is $7$."], None),
])
def test_fully_labelled_steps_are_shown_without_labels(steps, shown) -> None:
    trajectory = Trajectory(id="t", question="q", steps=steps)
    _, user = render(TAXONOMY.category("counterfactual"), trajectory, "edits")
    assert parse_trajectory_block(user)[1] == (shown or steps)


class _Scripted(Engine):
    """An engine that answers one fixed text (what a model would)."""

    takes_feedback = False
    name = "scripted"

    def describe(self) -> dict:
        return {"engine": self.name}

    def __init__(self, text: str) -> None:
        self.text, self.seen = text, []

    async def propose(self, messages, **_):
        from injector.engines.base import Proposal
        self.seen.append(messages)
        return Proposal(text=self.text)


def test_written_records_carry_labels_renumbered_on_every_step() -> None:
    import asyncio
    from injector.inject.unit import inject_one
    answer = {"question": None, "reason": "r", "edits": [
        {"op": "insert", "after": 1, "text": "With $x = 2$, $x + 1 = 3$.", "error": True}]}
    engine = _Scripted(json.dumps(answer))
    candidate = asyncio.run(inject_one(TAXONOMY, TAXONOMY.category("redundancy"), LABELLED, engine))
    assert candidate.trajectory_id == "test:labelled" and candidate.original_process == LABELLED.steps
    assert candidate.modified_process == ["Step 1: Let $x = 2$.", "Step 2: With $x = 2$, $x + 1 = 3$.",
                                          "Step 3: Then $x + 3 = 5$.", "Step 4: So 5.\n\n# Answer\n\n5"]
    assert (candidate.modified_steps, candidate.error_steps) == ([2], [2])
    assert "Step 1:" not in engine.seen[0][1]["content"]


def test_the_side_by_side_page_is_up_to_date() -> None:
    """docs/categories.md is generated from the taxonomy and its examples; regenerate it after a change with
    `python docs/build_categories.py`."""
    import importlib.util
    root = Path(__file__).resolve().parent.parent
    spec = importlib.util.spec_from_file_location("build_categories", root / "docs" / "build_categories.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    page = (root / "docs" / "categories.md").read_text(encoding="utf-8")
    assert page == module.build(), "docs/categories.md is stale: run python docs/build_categories.py"
    for category in TAXONOMY.categories:
        assert f"## {category.id} (" in page and category.definition in page
