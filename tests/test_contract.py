"""Tolerant parsing of model answers, the LaTeX pre-pass, shape checks and the strict response schema."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from injector.answer.contract import (
    LATEX_COMMANDS,
    AnswerError,
    FullAnswer,
    MultiSolutionAnswer,
    escape_latex_backslashes,
    parse_answer,
    parse_json_object,
    response_schema,
)

PRMBENCH = Path(__file__).parent / "fixtures" / "prmbench"

FULL = {
    "modified_question": "What is $\\frac{1}{2} + \\frac{1}{3}$?",
    "modified_process": ["Common denominator: $6$.", "So $\\frac{3}{6} + \\frac{2}{6} = \\frac{5}{6}$."],
    "modified_steps": [2],
    "error_steps": [2],
    "reason": "Step 2 adds the numerators {3 and 2} wrongly.",
}


# --- tolerant parsing -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reply",
    [
        "```json\n{body}\n```",
        "```\n{body}\n```",
        "Here is the modified solution:\n\n```json\n{body}\n```\nLet me know if you need more.",
        "Sure! {body} I hope this helps.",
        "Using the set {{1, 2}} from the question, I answer: {body}\nDone.",
        "  {body}  ",
    ],
    ids=["json-fence", "bare-fence", "fence-and-prose", "prose", "prose-with-braces", "whitespace"],
)
def test_object_is_found_around_fences_and_prose(reply):
    assert parse_json_object(reply.format(body=json.dumps(FULL))) == FULL


def test_braces_inside_strings_do_not_end_the_object():
    record = {"reason": "a } closes and a { opens", "nested": {"inner": "}}{{"}, "steps": ["{", "}"]}
    assert parse_json_object("Answer: " + json.dumps(record) + " -- {not json}") == record


def test_longest_object_wins_over_a_small_one_in_prose():
    reply = 'An empty answer would be {}. My answer: ' + json.dumps(FULL)
    assert parse_json_object(reply) == FULL


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"modified_steps": [2, 3,], "reason": "r",}', {"modified_steps": [2, 3], "reason": "r"}),
        ('```json\n{"a": "x" "b": 2}\n```', {"a": "x", "b": 2}),
        ('{"reason": "uses \\sqrt{2}", "error_steps": [1,],}', {"reason": "uses \\sqrt{2}", "error_steps": [1]}),
        ('{"a": 1, "b": [1, 2', {"a": 1, "b": [1, 2]}),
    ],
    ids=["trailing-commas", "missing-comma", "trailing-comma-and-latex", "truncated"],
)
def test_broken_json_is_repaired(reply, expected):
    assert parse_json_object(reply) == expected


def test_raw_newline_inside_a_string_is_accepted():
    assert parse_json_object('{"reason": "line one\nline two"}') == {"reason": "line one\nline two"}


@pytest.mark.parametrize(
    ("reply", "detail"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("I cannot help with that.", "does not contain"),
        ('[{"reason": "r"}]', "a list"),
        ('```json\n["a", "b"]\n```', "a list"),
        ('"just a string"', "a string"),
        ("42", "a number"),
    ],
)
def test_no_object_is_a_parse_error_that_asks_for_one(reply, detail):
    with pytest.raises(AnswerError) as caught:
        parse_json_object(reply)
    assert caught.value.code == "parse_error"
    assert detail in caught.value.message
    assert "exactly one JSON object" in caught.value.message


# --- LaTeX pre-pass ---------------------------------------------------------------------------------------------

# (what the model wrote inside a JSON string, the text it meant)
LATEX_CASES = [
    (r"\frac{1}{2}", r"\frac{1}{2}"),
    (r"\beta + 1", r"\beta + 1"),
    (r"2 \times 3", r"2 \times 3"),
    (r"x \neq 5", r"x \neq 5"),
    (r"x \neq5", r"x \neq5"),
    (r"a \ne b", r"a \ne b"),
    (r"a \ne", r"a \ne"),
    (r"\nabla f", r"\nabla f"),
    (r"x \rightarrow 0", r"x \rightarrow 0"),
    (r"5 \text{ cm}", r"5 \text{ cm}"),
    (r"\tfrac12", r"\tfrac12"),
    (r"\therefore x = 2", r"\therefore x = 2"),
    (r"\underline{x}", r"\underline{x}"),
    (r"\uparrow", r"\uparrow"),
    (r"\sqrt{2}", r"\sqrt{2}"),
    (r"a \cdot b", r"a \cdot b"),
    (r"\(x^2\)", r"\(x^2\)"),
    (r"\[x^2\]", r"\[x^2\]"),
    (r"\{1, 2\}, \, \; \! \% \$ \ x", r"\{1, 2\}, \, \; \! \% \$ \ x"),
    (r"\unknown", r"\unknown"),
    (r"Step 1.\n2 + 2 = 4", "Step 1.\n2 + 2 = 4"),
    (r"Step 1.\nThe sum", "Step 1.\nThe sum"),
    (r"\n\nStep 2", "\n\nStep 2"),
    (r"end\r\n", "end\r\n"),
    (r"x\t= 1", "x\t= 1"),
    (r"caf\u00e9", "café"),
    (r"say \"hi\"", 'say "hi"'),
    (r"a\/b", "a/b"),
    (r"\\frac{1}{2}", r"\frac{1}{2}"),
    (r"\\\frac{1}{2}", "\\" + r"\frac{1}{2}"),
    (r"\\n", r"\n"),
]


@pytest.mark.parametrize(("written", "meant"), LATEX_CASES, ids=[case[0] for case in LATEX_CASES])
def test_latex_is_kept_literally_and_json_escapes_still_work(written, meant):
    assert parse_json_object('{"s": "' + written + '"}') == {"s": meant}


def test_even_runs_of_backslashes_are_left_alone():
    assert escape_latex_backslashes(r'{"s": "\\frac \\\\ \\n"}') == r'{"s": "\\frac \\\\ \\n"}'
    assert escape_latex_backslashes(r'"\frac \sqrt"') == r'"\\frac \\sqrt"'


def test_commands_listed_are_only_those_that_look_like_json_escapes():
    assert {"frac", "beta", "neq", "ne", "nu", "times", "text", "rightarrow", "uparrow", "underline"} <= LATEX_COMMANDS
    assert all(name[0] in "bfnrtu" and name.isalpha() for name in LATEX_COMMANDS)
    # a bare escape letter must stay a JSON escape
    assert not LATEX_COMMANDS & set("bfnrtu")


# --- real data: PRMBench answers damaged as a model damages them -------------------------------------------------

CONTROL_LETTER = {"\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)


def _damage(record: dict) -> str:
    """The record as a model writes it when it forgets to escape backslashes: every literal one comes out single.

    Genuine escapes (a newline written as `\\n`, a quote) stay as they are.
    """
    dumped = json.dumps(record, ensure_ascii=False)
    return re.sub(r"\\(.)", lambda escape: "\\" if escape.group(1) == "\\" else escape.group(0), dumped)


def _ambiguous(record: dict) -> bool:
    """Whether the damaged text means something else even to a careful reader."""
    for text in _strings(record):
        if "\\\\" in text:  # a LaTeX line break `\\` comes out as an escaped single backslash
            return True
        # a literal backslash before what JSON reads as an escape, e.g. the two characters `\n` (no LaTeX command)
        for escape in re.finditer(r'\\(["/]|[bfnrt][A-Za-z]*|u[0-9A-Fa-f]{4})', text):
            if re.match(r"[A-Za-z]*", escape.group(1)).group() not in LATEX_COMMANDS:
                return True
        # a real newline or tab directly followed by letters that spell a command with its escape letter (`\n` + "eq")
        for control in re.finditer(r"[\b\f\n\r\t]([A-Za-z]+)", text):
            if CONTROL_LETTER[control.group()[0]] + control.group(1) in LATEX_COMMANDS:
                return True
    return False


def _prmbench_records_with_backslashes() -> list[dict]:
    records = [json.loads(line) for path in sorted(PRMBENCH.glob("*.jsonl")) for line in path.open(encoding="utf-8")]
    return [record for record in records if any("\\" in text for text in _strings(record))]


def test_damaged_prmbench_answers_are_restored_exactly():
    records = _prmbench_records_with_backslashes()
    ambiguous = [record for record in records if _ambiguous(record)]
    usable = [record for record in records if not _ambiguous(record)]
    # 8 questions carry a literal two-character `\n`, 1 multi-solution answer a LaTeX line break `\\`
    assert len(ambiguous) == 9
    assert len(usable) == 154

    plain_failed = plain_corrupted = 0
    wrong = []
    for record in usable:
        damaged = _damage(record)
        try:
            plain_corrupted += json.loads(damaged) != record
        except json.JSONDecodeError:
            plain_failed += 1
        if parse_json_object(damaged) != record:
            wrong.append(record["idx"] + " " + record["classification"])
    # the damage is real and of both kinds: invalid JSON, and valid JSON that decodes into other text
    assert plain_failed > 0 and plain_corrupted > 0
    assert wrong == []


def test_damaged_prmbench_answer_in_a_chatty_reply():
    record = next(r for r in _prmbench_records_with_backslashes() if not _ambiguous(r))
    reply = "Here is the modified solution:\n```json\n" + _damage(record) + "\n```\nThe error is in the step listed."
    assert parse_json_object(reply) == record
    assert parse_answer(reply, multi_solution=False).modified_process == record["modified_process"]


# --- shape checks ------------------------------------------------------------------------------------------------


def test_full_answer_ignores_extra_keys():
    answer = parse_answer(
        json.dumps({**FULL, "original_question": "q", "original_process": ["s"], "idx": "prm_test_p1_0"}),
        multi_solution=False,
    )
    assert isinstance(answer, FullAnswer)
    assert answer.model_dump(exclude={"explanations"}) == FULL and answer.explanations is None


def test_integer_strings_and_integral_floats_are_read_as_step_numbers():
    answer = parse_answer(json.dumps({**FULL, "modified_steps": ["2", 3.0], "error_steps": ["2"]}), multi_solution=False)
    assert (answer.modified_steps, answer.error_steps) == ([2, 3], [2])


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"modified_steps": [2.5]}, "modified_steps: expected a list of integers (1-based step numbers), but item 1 is 2.5"),
        ({"error_steps": [1, [2]]}, "error_steps: expected a list of integers (1-based step numbers), but item 2 is [2]"),
        ({"error_steps": None}, "error_steps: expected a list of integers (1-based step numbers), got null"),
        ({"error_steps": [True]}, "error_steps: expected a list of integers (1-based step numbers), but item 1 is true"),
        ({"modified_steps": "2"}, "modified_steps: expected a list of integers (1-based step numbers), got a string"),
        ({"modified_process": "Step 1. Step 2."}, "modified_process: expected a list of strings, one per step, got a string"),
        ({"modified_process": ["ok", 7]}, "modified_process: expected a list of strings, one per step, but item 2 is 7"),
        ({"reason": None}, "reason: expected a string, got null"),
    ],
)
def test_schema_errors_name_the_field(change, expected):
    with pytest.raises(AnswerError) as caught:
        parse_answer(json.dumps({**FULL, **change}), multi_solution=False)
    assert caught.value.code == "schema"
    assert caught.value.message == expected


def test_several_missing_fields_are_all_named():
    with pytest.raises(AnswerError) as caught:
        parse_answer(json.dumps({"modified_process": ["a"], "modified_steps": [1]}), multi_solution=False)
    assert caught.value.message == (
        "modified_question: missing; expected a string; "
        "error_steps: missing; expected a list of integers (1-based step numbers); "
        "reason: missing; expected a string"
    )


def test_unreadable_answer_is_a_parse_error_not_a_schema_error():
    with pytest.raises(AnswerError) as caught:
        parse_answer("I could not find an error to inject.", multi_solution=False)
    assert caught.value.code == "parse_error"


def test_multi_solution_answer_needs_only_the_process():
    answer = parse_answer('{"modified_process": ["$x = \\frac{1}{2}$"], "idx": "p"}', multi_solution=True)
    assert isinstance(answer, MultiSolutionAnswer)
    assert answer.model_dump() == {"modified_process": ["$x = \\frac{1}{2}$"], "reason": ""}


def test_multi_solution_answer_without_a_process_is_a_schema_error():
    with pytest.raises(AnswerError) as caught:
        parse_answer('{"reason": "another way"}', multi_solution=True)
    assert (caught.value.code, caught.value.message) == (
        "schema",
        "modified_process: missing; expected a list of strings, one per step",
    )


def test_prmbench_multi_solution_records_parse_as_multi_solution_answers():
    path = PRMBENCH / "prm_test_p12_multi_solutions.first10.jsonl"
    for line in path.open(encoding="utf-8"):
        record = json.loads(line)
        answer = parse_answer(line, multi_solution=True)
        assert answer.modified_process == record["modified_process"]


# --- response schema ---------------------------------------------------------------------------------------------


def _keys_anywhere(node) -> set[str]:
    if isinstance(node, dict):
        return set(node) | set().union(*(_keys_anywhere(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_keys_anywhere(value) for value in node))
    return set()


@pytest.mark.parametrize(("multi_solution", "model"), [(False, FullAnswer), (True, MultiSolutionAnswer)])
def test_response_schema_is_strict(multi_solution, model):
    schema = response_schema(multi_solution=multi_solution)
    assert schema["type"] == "object"
    assert set(schema["properties"]) == set(model.model_fields) - {"explanations"}  # not expressible strictly
    assert sorted(schema["required"]) == sorted(schema["properties"])
    assert schema["additionalProperties"] is False
    assert "default" not in _keys_anywhere(schema)
    assert schema["properties"]["modified_process"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": model.model_fields["modified_process"].description,
    }
    json.dumps(schema)  # must be plain JSON to travel in a request


def test_response_schema_types_step_numbers_as_integers():
    properties = response_schema(multi_solution=False)["properties"]
    for field in ("modified_steps", "error_steps"):
        assert properties[field]["type"] == "array"
        assert properties[field]["items"] == {"type": "integer"}
