"""Fuzz tests (hypothesis): whatever a model answers or an input file holds, the answer parser, the edit applier and
the input readers end in a verdict or a clear error (AnswerError, InjectorError), never another exception.

Derandomized with no example database, so CI sees the same examples every run; the counts stay modest so the whole
file runs in seconds.
"""
from __future__ import annotations

import json
from typing import get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from injector import Taxonomy, Trajectory, load_trajectories
from injector.answer.contract import AnswerError, Edit, EditOp, parse_answer
from injector.answer.edits import apply_edits
from injector.util.errors import InjectorError
from injector.answer.contract import answer_mode
from injector.sources.registry import format_names
from injector.inject.validation import validate_answer

EDIT_OPS = get_args(EditOp)
FUZZ = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow])
STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$ and $x \\neq 3$.", "So the answer is 5.\n\n# Answer\n\n5"]
TRAJECTORY = Trajectory(id="t", question="What is $2 + 3$?", steps=STEPS, answer="5")
TAXONOMY = Taxonomy.load()

# Pieces a model's answer is made of: JSON punctuation, LaTeX backslashes, fences, prose.
PIECES = st.sampled_from(['{', '}', '[', ']', '"', ',', ':', '\\', '\\n', '\\frac', '\\neq', '\\u12', '```json',
                          '```', 'null', 'true', '3', '-1', ' ', '\n', 'Here is the answer: ', '# Answer\\n3'])
# Runs of openers, deep enough to reach the decoders' recursion limits (issue 12: `"[" * 100000`).
NESTING = st.builds(lambda opener, depth: opener * depth, st.sampled_from(["[", "{", '{"a":', "[{"]),
                    st.integers(50, 3000))
SCALARS = st.none() | st.booleans() | st.integers(-5, 10) | st.floats(allow_nan=True) | st.text(max_size=20)
JSON_VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
STEP_NUMBERS = st.integers(-2, 6) | st.none() | st.sampled_from(["2", "x", 2.0, 2.5, True, [1]])
EDITS = st.fixed_dictionaries(
    {"op": st.sampled_from([*EDIT_OPS, "move", 3])},
    optional={"step": STEP_NUMBERS, "after": STEP_NUMBERS, "text": st.text(max_size=30) | st.none() | st.integers(),
              "error": st.booleans() | st.none() | st.text(max_size=3), "explanation": st.text(max_size=10)},
)
STEP_TEXTS = st.text(max_size=30) | st.sampled_from([*STEPS, "Then $x + 3 = 6$.", "Obviously, # Answer\\n6", ""])
GOOD_EDITS = st.one_of(
    st.fixed_dictionaries({"op": st.just("replace"), "step": st.integers(0, 4), "text": STEP_TEXTS,
                           "error": st.booleans()}),
    st.fixed_dictionaries({"op": st.just("insert"), "after": st.integers(-1, 4), "text": STEP_TEXTS,
                           "error": st.booleans()}),
    st.fixed_dictionaries({"op": st.sampled_from(["delete", "flag"]), "step": st.integers(0, 4)}),
)
WELL_SHAPED = {  # shaped right for the output mode, so the validator's rules are exercised too
    "edits": st.fixed_dictionaries({"question": st.none() | st.text(max_size=20),
                                    "edits": st.lists(GOOD_EDITS, max_size=4), "reason": st.text(max_size=20)}),
    "full": st.fixed_dictionaries({"modified_question": st.just(TRAJECTORY.question) | st.text(max_size=10),
                           "modified_process": st.lists(STEP_TEXTS, max_size=5),
                           "modified_steps": st.lists(st.integers(0, 6), max_size=3),
                           "error_steps": st.lists(st.integers(0, 6), max_size=3),
                           "reason": st.text(max_size=20)}),
}
ANY_SHAPE = st.fixed_dictionaries({}, optional={
    "question": st.none() | st.text(max_size=20),
    "edits": st.lists(EDITS, max_size=5) | JSON_VALUES,
    "reason": st.text(max_size=20) | JSON_VALUES,
    "modified_question": st.text(max_size=20) | st.just(TRAJECTORY.question),
    "modified_process": st.lists(st.text(max_size=30) | st.sampled_from(STEPS), max_size=6) | JSON_VALUES,
    "modified_steps": st.lists(STEP_NUMBERS, max_size=4) | JSON_VALUES,
    "error_steps": st.lists(STEP_NUMBERS, max_size=4) | JSON_VALUES,
    "explanations": st.dictionaries(st.text(max_size=3), st.text(max_size=10), max_size=3) | JSON_VALUES,
})


@st.composite
def answer_texts(draw, output_mode: str) -> str:
    """An answer object as JSON, then perhaps damaged: cut short, pieces spliced in, wrapped in prose or a fence."""
    text = json.dumps(draw(WELL_SHAPED[output_mode] | ANY_SHAPE), ensure_ascii=draw(st.booleans()))
    for _ in range(draw(st.sampled_from([0, 0, 1, 3]))):
        at = draw(st.integers(0, len(text)))
        piece = draw(PIECES) * draw(st.integers(1, 3)) if draw(st.integers(0, 4)) else draw(NESTING)
        text = text[:at] + piece + text[at + draw(st.integers(0, 3)):]
    if draw(st.integers(0, 3)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    wrap = draw(st.sampled_from(["{}", "```json\n{}\n```", "Sure! {} Hope this helps.", "{}{}"]))
    return wrap.replace("{}", text, 1).replace("{}", "")


def verdict_or_answer_error(text: str, category_id: str, output_mode: str) -> None:
    category = TAXONOMY.category(category_id)
    mode = answer_mode(category, output_mode)
    try:
        answer = parse_answer(text, multi_solution=category.rules.multi_solution, edits=mode == "edits")
    except AnswerError as exc:
        assert exc.code in ("parse_error", "schema") and exc.message
        return
    verdict = validate_answer(TAXONOMY, category, TRAJECTORY, answer)
    assert all(isinstance(code, str) for code in verdict.codes)
    assert bool(verdict.messages) == bool(verdict.codes)  # every failing rule says why


CATEGORIES = st.sampled_from([c.id for c in TAXONOMY.categories if c.id != "multi_solution"])


@FUZZ
@given(data=st.data(), category_id=CATEGORIES, output_mode=st.sampled_from(["edits", "full"]))
def test_any_answer_ends_as_a_verdict_or_an_answer_error(data, category_id: str, output_mode: str) -> None:
    verdict_or_answer_error(data.draw(answer_texts(output_mode)), category_id, output_mode)


@settings(FUZZ, max_examples=60)
@given(text=st.lists(PIECES | st.text(max_size=5) | NESTING, max_size=40).map("".join))
def test_any_text_ends_as_a_verdict_or_an_answer_error(text: str) -> None:
    verdict_or_answer_error(text, "counterfactual", "edits")


@FUZZ
@given(edits=st.lists(st.builds(
    Edit, op=st.sampled_from(EDIT_OPS), step=st.integers(-3, 8), after=st.integers(-3, 8),
    text=st.text(max_size=20), error=st.booleans() | st.none(), explanation=st.none() | st.text(max_size=5),
), max_size=8))
def test_the_edit_applier_takes_any_edits(edits: list[Edit]) -> None:
    result = apply_edits(STEPS, edits)
    assert all(isinstance(step, str) for step in result.modified_process)
    if not result.problems:  # every edit applied: each original step is kept, replaced or deleted exactly once
        acted = {edit.step for edit in edits if edit.op != "insert"}
        kept = [step for number, step in enumerate(STEPS, 1) if number not in acted]
        assert all(step in result.modified_process for step in kept)
        assert all(1 <= n <= len(result.modified_process) for n in result.modified_steps + result.error_steps)


RECORDS = st.one_of(
    JSON_VALUES,
    st.fixed_dictionaries({"question": SCALARS | JSON_VALUES, "steps": st.lists(SCALARS, max_size=3) | JSON_VALUES},
                          optional={"id": SCALARS, "answer": SCALARS, "images": JSON_VALUES, "meta": JSON_VALUES}),
    st.fixed_dictionaries({"original_question": SCALARS, "original_process": st.lists(SCALARS, max_size=3)},
                          optional={"idx": SCALARS, "ground_truth": SCALARS | JSON_VALUES}),
    st.fixed_dictionaries({"question": st.fixed_dictionaries({"problem": SCALARS, "ground_truth_answer": SCALARS}),
                           "label": st.fixed_dictionaries({"steps": JSON_VALUES, "finish_reason": SCALARS})}),
    st.fixed_dictionaries({"question": SCALARS, "process_evaluation": JSON_VALUES}),
    st.fixed_dictionaries({"question": SCALARS, "response": st.fixed_dictionaries(
        {"steps": JSON_VALUES, "process_correctness": JSON_VALUES})}),
)
LINES = st.one_of(RECORDS.map(json.dumps), st.binary(max_size=30).map(lambda raw: raw.decode("latin-1")),
                  st.lists(PIECES | NESTING, max_size=10).map("".join))


@settings(FUZZ, max_examples=100, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINES, min_size=0, max_size=4), raw_tail=st.binary(max_size=8),
       input_format=st.none() | st.sampled_from(format_names()), skip_invalid=st.booleans())
def test_any_input_file_ends_as_trajectories_or_an_injector_error(tmp_path, lines, raw_tail, input_format,
                                                                  skip_invalid) -> None:
    path = tmp_path / "input.jsonl"
    path.write_bytes("\n".join(lines).encode("utf-8", "surrogatepass") + raw_tail)
    try:
        source = load_trajectories(path, input_format, skip_invalid=skip_invalid)
        trajectories = list(source)
    except InjectorError as exc:
        assert str(exc)
        return
    assert all(isinstance(t, Trajectory) and t.steps for t in trajectories)
    assert source.stats.selected == len(trajectories)


@pytest.mark.parametrize("text", ["", "{", "[" * 5000, '{"edits": [' + "{" * 70, '"\\' * 300])
def test_edge_answers_seen_by_the_fuzzer(text: str) -> None:
    verdict_or_answer_error(text, "counterfactual", "edits")
