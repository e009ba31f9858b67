"""The category prompts: static system part, verbatim trajectory, worked examples that obey the contract, snapshots.

Snapshots of every rendered prompt live in tests/snapshots/prompts/<category id>.txt so that prompt changes show up
in review. After an intended change, accept the new text with: UPDATE_SNAPSHOTS=1 pytest tests/test_prompts.py
"""
from __future__ import annotations

import difflib
import json
import os
import re
from pathlib import Path

import pytest

from injector.prompts import render_messages
from injector.taxonomy import Category, Rules, Taxonomy
from injector.trajectory import Trajectory

TAXONOMY = Taxonomy.load()
CATEGORY_IDS = [category.id for category in TAXONOMY.categories]
SNAPSHOT_DIR = Path(__file__).parent / "snapshots" / "prompts"

# Words a changed step must never contain, beyond the taxonomy's own label_leak_phrases.
EXTRA_LEAK_WORDS = ["error", "errors"]

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


def render(category: Category, trajectory: Trajectory = TRAJECTORY) -> tuple[str, str]:
    messages = render_messages(TAXONOMY, category, trajectory)
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


def unchanged_positions(original: list[str], modified: list[str]) -> set[int]:
    """1-based positions in `modified` of steps that align with an identical original step (handles inserts)."""
    matcher = difflib.SequenceMatcher(None, original, modified, autojunk=False)
    positions: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            positions.update(range(j1 + 1, j2 + 1))
    return positions


def leaks(text: str, phrases: list[str]) -> list[str]:
    return [p for p in phrases if re.search(rf"(?<!\w){re.escape(p)}(?!\w)", text, re.I)]


def final_answer(step: str) -> str:
    assert "# Answer\n\n" in step, f"last step has no `# Answer` line: {step!r}"
    return step.rsplit("# Answer\n\n", 1)[1]


# --- rendering -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_every_category_renders(category_id: str) -> None:
    category = TAXONOMY.category(category_id)
    system, user = render(category)
    assert category.definition in system
    assert category.not_this in system
    for leftover in ("{{", "{%", "{#"):
        assert leftover not in system, f"unrendered Jinja syntax {leftover!r} in the system prompt"
    assert TRAJECTORY.question not in system
    assert user.endswith("Answer with the JSON object only.")


@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_system_message_is_static(category_id: str) -> None:
    category = TAXONOMY.category(category_id)
    assert render(category, TRAJECTORY)[0] == render(category, OTHER_TRAJECTORY)[0]


@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_user_message_presents_the_trajectory_exactly(category_id: str) -> None:
    _, user = render(TAXONOMY.category(category_id))
    assert TRAJECTORY.question in user
    for step in TRAJECTORY.steps:
        assert json.dumps(step, ensure_ascii=False) in user
    assert parse_trajectory_block(user) == (TRAJECTORY.question, TRAJECTORY.steps, TRAJECTORY.answer)
    assert "figures/graph.png" in user
    _, user_without_answer = render(TAXONOMY.category(category_id), OTHER_TRAJECTORY)
    assert "Known final answer" not in user_without_answer
    assert "image" not in user_without_answer


def test_template_syntax_in_the_data_comes_through_verbatim() -> None:
    trajectory = Trajectory(
        id="test:jinja",
        question="Is {{ 7*7 }} a square? {% if x %}yes{% endif %}",
        steps=["We check {# c #} first.", "Yes, $7^2$.\n\n# Answer\n\nyes"],
    )
    for category in TAXONOMY.categories:
        _, user = render(category, trajectory)
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


# --- worked examples -------------------------------------------------------------------------------------------

def example_problems(category: Category, example: dict) -> list[str]:
    """What is wrong with a worked example's answer under the output contract (empty: nothing)."""
    rules = category.rules
    original, answer = example["steps"], example["answer"]
    problems: list[str] = []
    if not 4 <= len(original) <= 7:
        problems.append("not 4 to 7 steps: keep examples short")
    if example["known"] != final_answer(original[-1]):
        problems.append("the known final answer differs from the last step's")
    process = answer.get("modified_process")
    if not (isinstance(process, list) and process and all(isinstance(s, str) and s for s in process)):
        return [*problems, "modified_process is not a list of non-empty strings"]
    if not (isinstance(answer.get("reason"), str) and answer["reason"].strip()):
        problems.append("no reason")

    if rules.multi_solution:
        if set(answer) != {"modified_process", "reason"}:
            problems.append(f"fields {sorted(answer)}, expected modified_process and reason only")
        if final_answer(process[-1]) != example["known"]:
            problems.append("a different final answer")
        if 2 * sum(s in original for s in process) >= len(process):
            problems.append("mostly copied steps")
        return problems

    expected = {"modified_question", "modified_process", "modified_steps", "error_steps", "reason"}
    if set(answer) != expected:
        return [*problems, f"fields {sorted(answer)}, expected {sorted(expected)}"]
    modified, errors = answer["modified_steps"], answer["error_steps"]
    for name, indices in (("modified_steps", modified), ("error_steps", errors)):
        if not all(isinstance(i, int) and 1 <= i <= len(process) for i in indices):
            problems.append(f"{name} {indices} not all within 1..{len(process)}")
        if indices != sorted(set(indices)):
            problems.append(f"{name} {indices} not sorted and unique")
    if not errors:
        problems.append("no error step")
    question_changed = answer["modified_question"] != example["question"]
    if question_changed and not rules.allow_question_edit:
        problems.append("the question changed")
    if not modified and not question_changed:
        problems.append("nothing was injected")
    if not rules.allow_error_on_unchanged_step and not set(errors) <= set(modified):
        problems.append(f"error_steps {errors} include unchanged steps (modified_steps {modified})")

    # A step not declared as modified must be byte-identical to the original step it aligns with, and a step
    # declared as modified must really differ.
    changed = set(range(1, len(process) + 1)) - unchanged_positions(original, process)
    if changed != set(modified):
        problems.append(f"modified_steps {modified}, but the changed or inserted steps are {sorted(changed)}")
    phrases = [*TAXONOMY.leak_phrases(category), *EXTRA_LEAK_WORDS]
    for position in sorted(changed | set(modified)):
        if 1 <= position <= len(process) and (found := leaks(process[position - 1], phrases)):
            problems.append(f"step {position} announces its error with {found}")
    return problems


@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_worked_examples_obey_the_contract(category_id: str) -> None:
    category = TAXONOMY.category(category_id)
    examples = parse_examples(render(category)[0])
    assert len(examples) == 2
    for number, example in enumerate(examples, 1):
        assert example_problems(category, example) == [], f"{category_id} example {number}"


def _mutated(category_id: str, change) -> list[str]:
    category = TAXONOMY.category(category_id)
    example = parse_examples(render(category)[0])[0]
    change(example["answer"])
    return example_problems(category, example)


@pytest.mark.parametrize(
    ("category_id", "change", "expected"),
    [
        ("counterfactual", lambda a: a["modified_steps"].clear(), "modified_steps []"),
        ("counterfactual", lambda a: a.update(error_steps=[9]), "not all within"),
        ("counterfactual", lambda a: a.update(modified_question="Another question?"), "the question changed"),
        ("redundancy", lambda a: a["modified_process"].__setitem__(0, a["modified_process"][0] + " "),
         "but the changed or inserted steps are [1, 4]"),
        ("redundancy", lambda a: a["modified_process"].__setitem__(3, "Step 4 (error): check it."),
         "announces its error"),
        ("step_contradiction", lambda a: a.update(error_steps=[1]), "include unchanged steps"),
        ("multi_solution", lambda a: a.update(error_steps=[]), "expected modified_process and reason only"),
    ],
)
def test_example_checker_rejects_bad_answers(category_id: str, change, expected: str) -> None:
    assert any(expected in problem for problem in _mutated(category_id, change))


# --- snapshots -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("category_id", CATEGORY_IDS)
def test_rendered_prompt_matches_snapshot(category_id: str) -> None:
    system, user = render(TAXONOMY.category(category_id))
    text = f"=== system ===\n{system}\n=== user ===\n{user}\n"
    path = SNAPSHOT_DIR / f"{category_id}.txt"
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"no snapshot {path}; create it with UPDATE_SNAPSHOTS=1 pytest tests/test_prompts.py"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), text.splitlines(keepends=True), str(path), "rendered", n=2
        ))
        pytest.fail(f"prompt for {category_id!r} changed; if intended, run UPDATE_SNAPSHOTS=1 pytest "
                    f"tests/test_prompts.py\n{diff}")
