"""Custom taxonomies: loading and every error message, `extends:`, per-category rules, hooks (context in the prompt,
checks fed back into a re-ask), `inject taxonomy validate`, and the Python example end to end."""
from __future__ import annotations

import asyncio
import importlib.util
import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import LLMEngine, Taxonomy, Trajectory, inject_one, render_messages
from injector.cli.commands import main
from injector.answer.contract import EditAnswer
from injector.util.errors import UserError
from injector.inject.validation import validate_answer

ROOT = Path(__file__).resolve().parent.parent
TRAJECTORY = Trajectory(id="t", question="What is $2 + 3$?",
                        steps=["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"], answer="5")
TEMPLATE = '{% extends "_base.j2" %}{% block guidance %}Make a unit slip.{% endblock %}'


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def taxonomy_file(directory: Path, categories: str, header: str = "name: mine\n") -> Path:
    write(directory, "prompts/unit.j2", TEMPLATE)
    return write(directory, "taxonomy.yaml", header + "categories:\n" + textwrap.indent(textwrap.dedent(categories), "  "))


UNIT = """
- id: unit_slip
  name: Unit Consistency
  definition: State a result in the wrong unit.
  template: prompts/unit.j2
"""


def test_bundled_by_name_and_custom_by_path(tmp_path):
    assert Taxonomy.load("prmbench").name == "prmbench"
    taxonomy = Taxonomy.load(taxonomy_file(tmp_path, UNIT))
    [category] = taxonomy.categories
    assert Path(category.template) == (tmp_path / "prompts" / "unit.j2").resolve()
    system, user = render_messages(taxonomy, category, TRAJECTORY)
    assert "Make a unit slip." in system["content"] and "State a result in the wrong unit." in system["content"]


@pytest.mark.parametrize(("categories", "message"), [
    (UNIT.replace("name:", "nmae:"), "unknown key 'categories.unit_slip.nmae': remove it or fix its spelling"),
    (UNIT.replace("  name: Unit Consistency\n", ""), "missing key 'categories.unit_slip.name'"),
    (UNIT + "  rules: {min_changes: -1}\n", "categories.unit_slip.rules.min_changes: Input should be greater than "
                                            "or equal to 0"),
    (UNIT + "  rules: {final_answer: maybe}\n", "categories.unit_slip.rules.final_answer: Input should be 'any', "
                                                "'keep' or 'change'"),
    (UNIT + "  rules: {min_changes: 3, max_changes: 2}\n", "min_changes (3) is above max_changes (2)"),
    (UNIT + UNIT, "duplicate category id 'unit_slip': ids must be unique"),
    (UNIT.replace("prompts/unit.j2", "prompts/missing.j2"), "categories.unit_slip.template:"),
    (UNIT.replace("prompts/unit.j2", "../elsewhere.j2"), "must be a path inside the taxonomy's directory"),
    (UNIT.replace("unit_slip", "Unit Slip"), "String should match pattern"),
])
def test_every_error_names_the_file_the_key_and_the_fix(tmp_path, categories, message):
    path = taxonomy_file(tmp_path, categories)
    with pytest.raises(UserError) as error:
        Taxonomy.load(path)
    assert str(error.value).startswith(str(path)) and message in str(error.value)


def test_several_problems_are_reported_at_once(tmp_path):
    path = taxonomy_file(tmp_path, UNIT.replace("name:", "nmae:") + "  colour: red\n")
    with pytest.raises(UserError, match="3 problems") as error:
        Taxonomy.load(path)
    assert "missing key 'categories.unit_slip.name'" in str(error.value)
    assert "'categories.unit_slip.nmae'" in str(error.value) and "'categories.unit_slip.colour'" in str(error.value)


@pytest.mark.parametrize(("text", "message"), [
    ("name: x\ncategories: [\n", "not valid YAML"),
    ("- a list\n", "a taxonomy is a mapping"),
    ("name: x\nextends: nope\ncategories: []\n", "extends: 'nope' is not a bundled taxonomy; choose one of"),
])
def test_malformed_files(tmp_path, text, message):
    path = write(tmp_path, "taxonomy.yaml", text)
    with pytest.raises(UserError, match=message):
        Taxonomy.load(path)


def test_extends_overrides_and_adds(tmp_path):
    path = taxonomy_file(tmp_path, UNIT + """
- id: confidence
  definition: Our own wording.
  rules: {final_answer: change}
""", header="name: mine\nextends: prmbench\nlabel_leak_phrases: [oops]\n")
    taxonomy = Taxonomy.load(path)
    ids = [c.id for c in taxonomy.categories]
    assert ids[:9] == [c.id for c in Taxonomy.load().categories] and ids[9] == "unit_slip"
    confidence = taxonomy.category("confidence")
    assert confidence.definition == "Our own wording." and confidence.name == "Confidence Invariance"
    assert confidence.rules.final_answer == "change" and confidence.prmbench_id == "confidence"
    assert Path(confidence.template).name == "confidence.j2"  # still the bundled template
    missing = taxonomy.category("missing_condition")
    assert missing.rules.allow_question_edit and missing.rules.allow_error_on_unchanged_step
    assert "oops" in taxonomy.leak_phrases(confidence) and "incorrectly" in taxonomy.leak_phrases(confidence)


def edits(*items, question=None):
    return EditAnswer.model_validate({"question": question, "edits": list(items), "reason": "r"})


WRONG = {"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.", "error": True}


@pytest.mark.parametrize(("rules", "answer", "codes"), [
    ({"final_answer": "keep"}, edits(WRONG), []),
    ({"final_answer": "keep"}, edits(WRONG, {"op": "replace", "step": 3, "text": "So 6.\n\n# Answer\n\n6"}),
     ["answer_changed"]),
    ({"final_answer": "change"}, edits(WRONG), ["answer_unchanged"]),
    ({"min_changes": 2}, edits(WRONG), ["too_few_changes"]),
    ({"max_changes": 1}, edits(WRONG, {"op": "insert", "after": 0, "text": "Start."}), ["too_many_changes"]),
    ({"require_explanations": True}, edits(WRONG), ["missing_explanation"]),
    ({"require_explanations": True}, edits(dict(WRONG, explanation="2 + 3 is 5")), []),
    # A trap: an unchanged step may be an error step only when the question was changed.
    ({"allow_question_edit": True, "allow_error_on_unchanged_step": "with_question_edit"},
     edits({"op": "flag", "step": 2}), ["error_on_unchanged_step"]),
    ({"allow_question_edit": True, "allow_error_on_unchanged_step": "with_question_edit"},
     edits({"op": "flag", "step": 2}, question="What is $2 + 4$?"), []),
])
def test_category_rules(tmp_path, rules, answer, codes):
    taxonomy = Taxonomy.load(taxonomy_file(tmp_path, UNIT + f"  rules: {json.dumps(rules)}\n"))
    verdict = validate_answer(taxonomy, taxonomy.category("unit_slip"), TRAJECTORY, answer)
    assert verdict.codes == codes, verdict.messages


HOOK = '''
    class UnitCheck:
        def context(self, trajectory):
            return {"units": "dollars, cents"}

        def check(self, trajectory, verdict):
            for step in verdict.error_steps:
                if "cents" not in verdict.modified_process[step - 1]:
                    yield "no_unit_slip", f"error step {step} must state its result in cents"
'''


def hook_taxonomy(tmp_path: Path, template: str) -> Taxonomy:
    write(tmp_path, "checks.py", HOOK)
    path = taxonomy_file(tmp_path, UNIT + "  hook: checks.py:UnitCheck\n")
    write(tmp_path, "prompts/unit.j2", template)  # after taxonomy_file, which writes the default one
    return Taxonomy.load(path)


def test_hook_context_is_rendered(tmp_path):
    taxonomy = hook_taxonomy(tmp_path, "{% if part == 'system' %}S{% else %}Units: {{ units }}; "
                                       "{{ question }}{% endif %}")
    system, user = render_messages(taxonomy, taxonomy.category("unit_slip"), TRAJECTORY)
    assert user["content"] == "Units: dollars, cents; What is $2 + 3$?"


def test_hook_check_feeds_a_reask(tmp_path, scripted_server):
    taxonomy = hook_taxonomy(tmp_path, TEMPLATE)
    scripted_server.reply_in_order([
        json.dumps({"question": None, "edits": [WRONG], "reason": "r"}),
        json.dumps({"question": None, "edits": [dict(WRONG, text="Then $x + 3 = 5$ cents.")], "reason": "r"}),
    ])
    engine = LLMEngine("openai/scripted", api_base=scripted_server.api_base, backoff_seconds=0)
    engine.check_ready()
    record = asyncio.run(inject_one(taxonomy, taxonomy.category("unit_slip"), TRAJECTORY, engine))
    assert [a.codes for a in record.provenance.attempts] == [["no_unit_slip"], []]
    feedback = scripted_server.requests[1]["body"]["messages"][-1]["content"]
    assert "error step 2 must state its result in cents" in feedback


def test_a_hook_is_imported_only_when_its_category_is_used(tmp_path):
    write(tmp_path, "checks.py", "raise RuntimeError('imported!')\n")
    write(tmp_path, "prompts/unit.j2", TEMPLATE)
    path = write(tmp_path, "taxonomy.yaml", "name: mine\ncategories:\n" + textwrap.indent(textwrap.dedent(
        UNIT + "  hook: checks.py:Nope\n" + UNIT.replace("unit_slip", "plain")), "  "))
    taxonomy = Taxonomy.load(path)  # loading does not run the hook
    render_messages(taxonomy, taxonomy.category("plain"), TRAJECTORY)
    with pytest.raises(UserError, match="importing .*checks.py failed: RuntimeError: imported!"):
        render_messages(taxonomy, taxonomy.category("unit_slip"), TRAJECTORY)


def test_taxonomy_validate_reports_every_problem(tmp_path):
    result = CliRunner().invoke(main, ["taxonomy", "validate", "prmbench"])
    assert result.exit_code == 0 and "prmbench: ok (9 categories" in result.output
    write(tmp_path, "checks.py", "class Bad:\n    def check(self, t, v):\n        return ['not a pair']\n")
    write(tmp_path, "prompts/unit.j2", TEMPLATE)
    write(tmp_path, "prompts/broken.j2", "{% if part == 'system' %}{{ category.nope }}{% else %}u{% endif %}")
    path = write(tmp_path, "taxonomy.yaml", "name: mine\ncategories:\n" + textwrap.indent(textwrap.dedent(
        UNIT + "  hook: checks.py:Bad\n" + UNIT.replace("unit_slip", "broken").replace("unit.j2", "broken.j2")),
        "  "))
    result = CliRunner().invoke(main, ["taxonomy", "validate", str(path)])
    assert result.exit_code == 2
    assert "3 problem(s)" in result.output
    assert "hook check must return (code, message) pairs" in result.output
    assert "category 'broken' (edits mode)" in result.output and "category 'broken' (full mode)" in result.output


def test_categories_command_takes_a_custom_taxonomy(tmp_path):
    result = CliRunner().invoke(main, ["categories", "--taxonomy", str(taxonomy_file(tmp_path, UNIT))])
    assert result.exit_code == 0 and "taxonomy mine: 1 categories" in result.output and "unit_slip" in result.output


def test_python_example_runs_end_to_end(tmp_path):
    spec = importlib.util.spec_from_file_location("custom_category", ROOT / "examples" / "custom_category.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    counts = example.main(str(tmp_path / "run"))
    assert counts.candidates > 0 and set(counts.codes) <= {"not_applicable"}
    candidates = [json.loads(l) for l in (tmp_path / "run" / "candidates.jsonl").read_text().splitlines()]
    for candidate in candidates:
        [step] = candidate["error_steps"]
        assert candidate["classification"] == "unit_slip"
        assert candidate["modified_process"][step - 1] != candidate["original_process"][step - 1]


def test_a_taxonomy_changed_in_python_is_a_different_configuration(tmp_path):
    from injector import OfflineEngine, RunSpec, load_trajectories, run

    taxonomy = Taxonomy.load()
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy"]), out=tmp_path / "run", limit=1)
    run(load_trajectories(), spec, OfflineEngine())
    before = taxonomy.file_hash()
    taxonomy.category("redundancy").definition = "Something else."
    assert taxonomy.file_hash() != before
    with pytest.raises(UserError, match="holds a run with a different configuration"):
        run(load_trajectories(), spec, OfflineEngine())


@pytest.mark.parametrize(("question", "codes"), [
    ("What is $2 + 3$?", ["error_on_unchanged_step"]),
    ("What is $2 + 4$?", []),
])
def test_deception_flags_unchanged_steps_only_with_an_edited_question(question, codes):
    """Full mode too: the bundled deception may call an unchanged step an error only when it set a trap."""
    from injector.answer.contract import FullAnswer
    taxonomy = Taxonomy.load()
    answer = FullAnswer.model_validate({"modified_question": question, "modified_process": list(TRAJECTORY.steps),
                                        "modified_steps": [], "error_steps": [2, 3], "reason": "r"})
    verdict = validate_answer(taxonomy, taxonomy.category("deception"), TRAJECTORY, answer)
    assert verdict.codes == codes, verdict.messages


GOOD_EXAMPLE = {
    "question": "What is $2 + 3$?",
    "steps": ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"],
    "answer": {"modified_process": ["Let $x = 2$.", "Then $x + 3 = 6$.", "So the answer is 6.\n\n# Answer\n\n6"],
               "error_steps": [2, 3], "reason": "Step 2 adds wrongly; step 3 carries it to the answer."},
}


@pytest.mark.parametrize("inline", [True, False])
def test_examples_inline_or_in_a_file_beside_the_taxonomy_reach_the_prompt(tmp_path, inline):
    if inline:
        path = taxonomy_file(tmp_path, UNIT + "  examples:\n" + textwrap.indent(json.dumps([GOOD_EXAMPLE]), "    "))
    else:
        write(tmp_path, "examples/unit.json", json.dumps([GOOD_EXAMPLE]))
        path = taxonomy_file(tmp_path, UNIT + "  examples: examples/unit.json\n")
    taxonomy = Taxonomy.load(path)
    # A unit on another problem sees the example (a unit on the example's own problem would not).
    other = TRAJECTORY.model_copy(update={"question": "What is $4 + 3$?"})
    system = render_messages(taxonomy, taxonomy.category("unit_slip"), other)[0]["content"]
    assert '{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.", "error": true}' in system
    result = CliRunner().invoke(main, ["taxonomy", "validate", str(path)])
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(("answer", "message"), [
    ({"error_steps": [1]}, "example 1: full form: error_on_unchanged_step: error step 1 is unchanged"),
    ({"modified_process": ["Let $x = 2$.", "Then $x + 3 = 6$.", "So the answer is 5.\n\n# Answer\n\n5"],
      "error_steps": [2]}, "example 1: the last step does not change: propagate the error"),
    ({"modified_question": "What is $2 + 4$?"}, "example 1: edit form: question_edit_not_allowed"),
])
def test_taxonomy_validate_fails_on_an_example_that_breaks_its_rules(tmp_path, answer, message):
    example = json.loads(json.dumps(GOOD_EXAMPLE))
    example["answer"].update(answer)
    write(tmp_path, "examples/unit.yaml", json.dumps([example]))
    path = taxonomy_file(tmp_path, UNIT + "  examples: examples/unit.yaml\n")
    result = CliRunner().invoke(main, ["taxonomy", "validate", str(path)])
    assert result.exit_code == 2 and "category 'unit_slip' " + message in result.output, result.output


@pytest.mark.parametrize(("value", "content", "message"), [
    ("../outside.yaml", None, "categories.unit_slip.examples: '../outside.yaml' must be a path inside"),
    ("missing.yaml", None, "categories.unit_slip.examples: cannot read missing.yaml"),
    ("ex.yaml", "question: not a list\n", "ex.yaml must hold a list of examples"),
    ("ex.yaml", "- [unclosed\n", "ex.yaml is not valid YAML or JSON"),
    ("ex.yaml", json.dumps([{"question": "q", "steps": []}]), "categories.unit_slip.examples.0.steps"),
])
def test_a_bad_examples_key_is_one_message_naming_the_file_and_the_key(tmp_path, value, content, message):
    if content is not None:
        write(tmp_path, value, content)
    path = taxonomy_file(tmp_path, UNIT + f"  examples: {value}\n")
    with pytest.raises(UserError) as error:
        Taxonomy.load(path)
    assert str(error.value).startswith(str(path)) and message in str(error.value)
