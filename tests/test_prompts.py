"""The category prompts: static system part, verbatim trajectory, worked examples that obey the contract, snapshots.

Every prompt renders in two output modes: "full" (the model writes back the whole modified solution) and "edits"
(the model lists only its edits; the default, except for multi_solution, which is always "full"). The worked
examples of both modes are checked against their contract, and the edit-form answers, applied to the example's
steps, must reproduce the full-form answers.

Snapshots of every rendered prompt live in tests/snapshots/prompts/<category id>.txt (full mode) and
<category id>.edits.txt (edit mode) so that prompt changes show up in review. After an intended change, accept the
new text with: UPDATE_SNAPSHOTS=1 pytest tests/test_prompts.py
"""
from __future__ import annotations

import difflib
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from snapshots import assert_snapshot

from injector.errors import UserError
from injector.prompts import render_messages
from injector.taxonomy import Category, Rules, Taxonomy
from injector.trajectory import Trajectory

TAXONOMY = Taxonomy.load()
CATEGORY_IDS = [category.id for category in TAXONOMY.categories]
INJECTED_IDS = [category.id for category in TAXONOMY.categories if not category.rules.multi_solution]
MODES = ["full", "edits"]
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


def unchanged_positions(original: list[str], modified: list[str]) -> set[int]:
    """1-based positions in `modified` of steps that align with an identical original step (handles inserts)."""
    matcher = difflib.SequenceMatcher(None, original, modified, autojunk=False)
    positions: set[int] = set()
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            positions.update(range(j1 + 1, j2 + 1))
    return positions


def effective_mode(category: Category, mode: str) -> str:
    return "full" if category.rules.multi_solution else mode


def output_section(system: str) -> str:
    section = re.search(r"^# Output\n(.*?)^# Worked examples$", system, re.M | re.S)
    assert section, "no `# Output` section before `# Worked examples`"
    return section.group(1)


def leaks(text: str, phrases: list[str]) -> list[str]:
    return [p for p in phrases if re.search(rf"(?<!\w){re.escape(p)}(?!\w)", text, re.I)]


def final_answer(step: str) -> str:
    assert "# Answer\n\n" in step, f"last step has no `# Answer` line: {step!r}"
    return step.rsplit("# Answer\n\n", 1)[1]


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


EDIT_KEYS = {"op", "step", "after", "text", "error", "explanation"}
# For each op: the keys it must give (not null) and the keys it may give (not null); any other key must be null.
EDIT_SHAPES = {
    "replace": ({"op", "step", "text"}, {"op", "step", "text", "error", "explanation"}),
    "insert": ({"op", "after", "text"}, {"op", "after", "text", "error", "explanation"}),
    "delete": ({"op", "step"}, {"op", "step"}),
    "flag": ({"op", "step"}, {"op", "step", "explanation"}),
}


def edit_example_problems(category: Category, example: dict) -> list[str]:
    """What is wrong with a worked example's edit-form answer under the edit contract (empty: nothing)."""
    rules = category.rules
    original, answer = example["steps"], example["answer"]
    count = len(original)
    if not isinstance(answer, dict) or set(answer) != {"question", "edits", "reason"}:
        return [f"fields {sorted(answer) if isinstance(answer, dict) else answer!r}, expected edits, question, reason"]
    problems: list[str] = []
    question = answer["question"]
    if question is not None:
        if not (isinstance(question, str) and question.strip()):
            problems.append("question is neither null nor a non-empty string")
        elif question == example["question"]:
            problems.append("question repeated unchanged instead of null")
        elif not rules.allow_question_edit:
            problems.append("the question changed")
    if not (isinstance(answer["reason"], str) and answer["reason"].strip()):
        problems.append("no reason")
    edits = answer["edits"]
    if not isinstance(edits, list):
        return [*problems, "edits is not a list"]
    if not edits and question is None:
        problems.append("nothing was injected")

    phrases = [*TAXONOMY.leak_phrases(category), *EXTRA_LEAK_WORDS]
    per_step: Counter[int] = Counter()
    has_error = False
    for number, edit in enumerate(edits, 1):
        where = f"edit {number}"
        if not isinstance(edit, dict):
            problems.append(f"{where} is not an object")
            continue
        if unknown := set(edit) - EDIT_KEYS:
            problems.append(f"{where} has unknown keys {sorted(unknown)}")
        op = edit.get("op")
        if op not in EDIT_SHAPES:
            problems.append(f"{where} has unknown op {op!r}")
            continue
        required, allowed = EDIT_SHAPES[op]
        given = {key for key, value in edit.items() if value is not None}
        if missing := required - given:
            problems.append(f"{where} ({op}) lacks {sorted(missing)}")
        if extra := given - allowed:
            problems.append(f"{where} ({op}) gives {sorted(extra)}, which do not apply")
        position = edit.get("step") if op != "insert" else edit.get("after")
        low = 0 if op == "insert" else 1
        if not (isinstance(position, int) and not isinstance(position, bool) and low <= position <= count):
            problems.append(f"{where} ({op}) position {position!r} not within {low}..{count} of the original steps")
            continue
        if "error" in given and not isinstance(edit["error"], bool):
            problems.append(f"{where} error {edit['error']!r} is not a boolean")
        if "explanation" in given and not (isinstance(edit["explanation"], str) and edit["explanation"].strip()):
            problems.append(f"{where} explanation is not a non-empty string")
        if "explanation" in given and op != "flag" and edit.get("error") is not True:
            problems.append(f"{where} explains a step that is not an error step")
        if op != "insert":
            per_step[position] += 1
        if op in ("replace", "insert"):
            text = edit.get("text")
            if not (isinstance(text, str) and text.strip()):
                problems.append(f"{where} ({op}) text is not a non-empty string")
                continue
            if found := leaks(text, phrases):
                problems.append(f"{where} ({op}) announces its error with {found}")
            if op == "replace" and text == original[position - 1]:
                problems.append(f"{where} replaces step {position} with the same text")
            has_error |= edit.get("error") is True
        if op == "delete" and not rules.allow_deletions:
            problems.append(f"{where} deletes step {position}, which this category forbids")
        if op == "flag":
            has_error = True
            if not rules.allow_error_on_unchanged_step:
                problems.append(f"{where} flags unchanged step {position}, which this category forbids")
    for step, times in sorted(per_step.items()):
        if times > 1:
            problems.append(f"step {step} has {times} replace/delete/flag edits, at most one allowed")
    if not has_error:
        problems.append("no error step")
    return problems


def apply_edits(question: str, steps: list[str], answer: dict) -> dict:
    """The full-form answer the edits stand for (an applier independent of the toolkit's)."""
    on_step: dict[int, dict] = {}
    inserts: dict[int, list[dict]] = defaultdict(list)
    for edit in answer["edits"]:
        if edit["op"] == "insert":
            inserts[edit["after"]].append(edit)
        else:
            on_step[edit["step"]] = edit
    process: list[str] = []
    modified: list[int] = []
    errors: list[int] = []

    def emit(text: str, changed: bool, error: bool) -> None:
        process.append(text)
        if changed:
            modified.append(len(process))
        if error:
            errors.append(len(process))

    for position in range(len(steps) + 1):
        if position:
            edit = on_step.get(position)
            if edit is None:
                emit(steps[position - 1], False, False)
            elif edit["op"] == "replace":
                emit(edit["text"], True, edit.get("error") is True)
            elif edit["op"] == "flag":
                emit(steps[position - 1], False, True)
            # delete: the step is gone
        for edit in inserts[position]:
            emit(edit["text"], True, edit.get("error") is True)
    return {
        "modified_question": question if answer["question"] is None else answer["question"],
        "modified_process": process,
        "modified_steps": modified,
        "error_steps": errors,
    }


@pytest.mark.parametrize("category_id", INJECTED_IDS)
def test_edit_form_examples_obey_the_contract_and_match_the_full_answers(category_id: str) -> None:
    category = TAXONOMY.category(category_id)
    full_examples = parse_examples(render(category, mode="full")[0])
    edit_examples = parse_examples(render(category, mode="edits")[0])
    assert len(edit_examples) == len(full_examples) == 2
    for number, (full, edits) in enumerate(zip(full_examples, edit_examples), 1):
        label = f"{category_id} example {number}"
        assert (edits["question"], edits["steps"], edits["known"]) == (full["question"], full["steps"], full["known"]), (
            f"{label}: the edit-form example has another input than the full-form one")
        assert edit_example_problems(category, edits) == [], label
        applied = apply_edits(edits["question"], edits["steps"], edits["answer"])
        expected = {key: full["answer"][key] for key in applied}
        assert applied == expected, f"{label}: the edits do not reproduce the full answer"


def test_apply_edits_order_and_indices() -> None:
    steps = ["a", "b", "c"]
    answer = {"question": None, "reason": "r", "edits": [
        {"op": "insert", "after": 2, "text": "x", "error": True},
        {"op": "replace", "step": 2, "text": "B", "error": True},
        {"op": "insert", "after": 0, "text": "first"},
        {"op": "insert", "after": 2, "text": "y", "error": None},
        {"op": "delete", "step": 3},
        {"op": "flag", "step": 1, "explanation": "why"},
    ]}
    assert apply_edits("q", steps, answer) == {
        "modified_question": "q",
        "modified_process": ["first", "a", "B", "x", "y"],
        "modified_steps": [1, 3, 4, 5],
        "error_steps": [2, 3, 4],
    }


def _mutated_edits(category_id: str, change, rules: Rules | None = None) -> list[str]:
    category = TAXONOMY.category(category_id)
    example = parse_examples(render(category, mode="edits")[0])[0]
    change(example["answer"])
    if rules is not None:
        category = category.model_copy(update={"rules": rules})
    return edit_example_problems(category, example)


@pytest.mark.parametrize(
    ("category_id", "change", "rules", "expected"),
    [
        ("counterfactual", lambda a: a["edits"][0].update(step=5), None, "not within 1..4"),
        ("counterfactual", lambda a: a["edits"][0].update(op="insert", after=None), None, "position None"),
        ("redundancy", lambda a: a["edits"][0].update(after=-1), None, "not within 0..4"),
        ("counterfactual", lambda a: a["edits"][0].update(op="rewrite"), None, "unknown op"),
        ("counterfactual", lambda a: a["edits"][0].update(after=3), None, "gives ['after']"),
        ("counterfactual", lambda a: a["edits"][0].update(text=None), None, "lacks ['text']"),
        ("counterfactual", lambda a: a["edits"][0].update(note="x"), None, "unknown keys ['note']"),
        ("counterfactual", lambda a: a["edits"][0].update(error=False), None, "no error step"),
        ("counterfactual", lambda a: a["edits"].append({"op": "flag", "step": 3}), None, "flags unchanged step 3"),
        ("counterfactual", lambda a: a["edits"].append({"op": "delete", "step": 2}), None, "step 2 has 2"),
        ("counterfactual", lambda a: a["edits"].append({"op": "delete", "step": 3}),
         Rules(allow_deletions=False), "deletes step 3"),
        ("counterfactual", lambda a: a.update(question="Another question?"), None, "the question changed"),
        ("counterfactual", lambda a: a["edits"][0].update(text="The sum is wrong: $180^\\circ$."), None,
         "announces its error"),
        ("counterfactual", lambda a: a["edits"][0].update(
            text="The exterior angles of a convex polygon add up to $360^\\circ$."), None, "with the same text"),
        ("redundancy", lambda a: a["edits"].clear(), None, "nothing was injected"),
        ("missing_condition", lambda a: a["edits"].append({"op": "replace", "step": 1, "text": "Let $p$ be it."}),
         None, "step 1 has 2"),
    ],
)
def test_edit_example_checker_rejects_bad_answers(category_id: str, change, rules, expected: str) -> None:
    problems = _mutated_edits(category_id, change, rules)
    assert any(expected in problem for problem in problems), problems


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

SNAPSHOT_CASES = [(category_id, "full") for category_id in CATEGORY_IDS] + [
    (category_id, "edits") for category_id in INJECTED_IDS  # multi_solution renders the same in both modes
]


@pytest.mark.parametrize(("category_id", "mode"), SNAPSHOT_CASES)
def test_rendered_prompt_matches_snapshot(category_id: str, mode: str) -> None:
    system, user = render(TAXONOMY.category(category_id), mode=mode)
    text = f"=== system ===\n{system}\n=== user ===\n{user}\n"
    path = SNAPSHOT_DIR / (f"{category_id}.txt" if mode == "full" else f"{category_id}.{mode}.txt")
    assert_snapshot(text, path, "tests/test_prompts.py")
