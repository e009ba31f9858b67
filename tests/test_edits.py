"""Edit mode: every op and their combinations, every reason code, and PRMBench records round-tripped through edits."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from injector.answer.align import normalize_step
from injector.answer.contract import AnswerError, Edit, EditAnswer, parse_answer, response_schema
from injector.answer.edits import apply_edits, edits_from_full
from injector.sources import load_trajectories
from injector.taxonomy import Taxonomy
from injector.model.trajectory import Trajectory
from injector.inject.validation import validate_answer

ORIGINAL = ["s1", "s2", "s3", "s4"]
QUESTION = "What is 1 + 1?"
TRAJECTORY = Trajectory(id="t", question=QUESTION, steps=["One plus one.", "That is 2.", "So 2.\n\n# Answer\n\n2"],
                        answer="2")


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return Taxonomy.load()


def apply(*edits: dict):
    return apply_edits(ORIGINAL, [Edit.model_validate(e) for e in edits], normalize=normalize_step)


def test_replace_delete_flag():
    result = apply({"op": "replace", "step": 2, "text": "S2", "error": True}, {"op": "delete", "step": 3},
                   {"op": "flag", "step": 4})
    assert result.modified_process == ["s1", "S2", "s4"]
    assert result.modified_steps == [2] and result.error_steps == [2, 3] and result.flagged_steps == [3]
    assert result.deleted_steps == [3] and result.problems == []


def test_inserts_at_the_start_the_end_and_several_after_one_step():
    result = apply({"op": "insert", "after": 0, "text": "first"}, {"op": "insert", "after": 4, "text": "last"},
                   {"op": "insert", "after": 2, "text": "a", "error": True}, {"op": "insert", "after": 2, "text": "b"})
    assert result.modified_process == ["first", "s1", "s2", "a", "b", "s3", "s4", "last"]
    assert result.modified_steps == [1, 4, 5, 8] and result.error_steps == [4]


def test_replace_next_to_delete_and_insert_beside_replace():
    result = apply({"op": "replace", "step": 2, "text": "S2", "error": True}, {"op": "delete", "step": 3},
                   {"op": "insert", "after": 2, "text": "new"})
    assert result.modified_process == ["s1", "S2", "new", "s4"] and result.problems == []
    assert result.modified_steps == [2, 3] and result.deleted_steps == [3]


def test_noop_replace_is_dropped_with_a_warning():
    result = apply({"op": "replace", "step": 1, "text": "1. s1.", "error": True})
    assert result.modified_process == ORIGINAL and result.modified_steps == [] and result.error_steps == []
    assert result.warnings == ["the replace of step 1 changes nothing; dropped"]


def test_conflicts_and_ranges_are_problems_and_not_applied():
    result = apply({"op": "replace", "step": 2, "text": "S2"}, {"op": "delete", "step": 2},
                   {"op": "insert", "after": 5, "text": "x"}, {"op": "flag", "step": 0})
    codes = [code for code, _ in result.problems]
    assert codes == ["index_out_of_range", "edit_conflict"]
    assert "step 2 (replace and delete)" in result.problems[1][1]
    assert result.modified_process == ORIGINAL


def test_explanations_are_kept_by_result_position():
    result = apply({"op": "insert", "after": 0, "text": "x", "error": True, "explanation": "why"})
    assert result.explanations == {1: "why"}


def answer(question=None, *edits):
    return EditAnswer(question=question, edits=[Edit.model_validate(e) for e in edits], reason="r")


WRONG = {"op": "replace", "step": 2, "text": "That is 3.", "error": True}


@pytest.mark.parametrize(("category", "edit_answer", "codes"), [
    ("counterfactual", answer(None, WRONG), []),
    ("counterfactual", answer(None, WRONG, {"op": "delete", "step": 2}), ["edit_conflict", "no_error_steps"]),
    ("counterfactual", answer(None, dict(WRONG, step=9)), ["index_out_of_range", "no_error_steps"]),
    ("counterfactual", answer(None, dict(WRONG, error=False)), ["no_error_steps"]),
    ("counterfactual", answer(None, {"op": "flag", "step": 2}), ["error_on_unchanged_step"]),
    ("missing_condition", answer("What is 1 + ?", {"op": "flag", "step": 2}), []),
    ("counterfactual", answer("What is 1 + 2?", WRONG), ["question_edit_not_allowed"]),
    ("deception", answer("What is 1 + 2?", WRONG), []),
    ("counterfactual", answer(None, dict(WRONG, text="That is wrongly 3.")), ["label_leak"]),
    ("counterfactual", answer(None, WRONG, {"op": "insert", "after": 1, "text": " . "}), ["empty_step"]),
    ("counterfactual", answer(None, WRONG, {"op": "delete", "step": 1}), []),
    ("counterfactual", answer(None, dict(WRONG, text="That is 2")), ["no_error_steps"]),  # no-op replace dropped
])
def test_edit_mode_reason_codes(taxonomy, category, edit_answer, codes):
    verdict = validate_answer(taxonomy, taxonomy.category(category), TRAJECTORY, edit_answer)
    assert verdict.codes == codes, verdict.messages


def test_deletions_recorded_and_forbidden_where_the_category_says(taxonomy):
    edit_answer = answer(None, WRONG, {"op": "delete", "step": 1})
    verdict = validate_answer(taxonomy, taxonomy.category("counterfactual"), TRAJECTORY, edit_answer)
    assert verdict.deleted_steps == [1] and verdict.warnings == ["deleted original steps: 1"]
    assert verdict.modified_steps == [1] and verdict.error_steps == [1]  # indices into the result
    strict = taxonomy.model_copy(deep=True)
    strict.path = taxonomy.path
    strict.category("counterfactual").rules.allow_deletions = False
    verdict = validate_answer(strict, strict.category("counterfactual"), TRAJECTORY, edit_answer)
    assert verdict.codes == ["deletion_not_allowed"]


def test_schema_errors_name_the_edit():
    with pytest.raises(AnswerError, match="edits: item 1: a replace edit needs text"):
        parse_answer('{"edits": [{"op": "replace", "step": 2}], "reason": ""}', edits=True)
    parsed = parse_answer('{"question": null, "edits": [{"op": "insert", "after": 0, "text": "x", "error": null, '
                          '"step": null, "explanation": null, "extra": 1}], "reason": "r"}', edits=True)
    assert parsed.edits[0].is_error is False
    schema = response_schema(edits=True)
    variants = schema["properties"]["edits"]["items"]["anyOf"]
    assert [v["properties"]["op"]["enum"] for v in variants] == [["replace"], ["insert"], ["delete"], ["flag"]]
    for variant in variants:  # OpenAI strict mode: every key required, nothing else allowed
        assert variant["additionalProperties"] is False and set(variant["required"]) == set(variant["properties"])


PRMBENCH = Path(__file__).parent / "fixtures" / "prmbench"


def test_prmbench_records_round_trip_through_edits(taxonomy):
    """Records valid under the core contract -> edits -> applied: the same modified_process and error steps."""
    checked = 0
    for path in sorted(PRMBENCH.glob("prm800k_train_p1_first400_4o_*.jsonl")):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        category = next(c for c in taxonomy.categories if c.prmbench_id == records[0]["classification"])
        for trajectory, record in zip(load_trajectories(path, "prmbench"), records):
            full = parse_answer(json.dumps(record), multi_solution=False)
            if not validate_answer(taxonomy, category, trajectory, full).accepted:
                continue
            edits = edits_from_full(trajectory.steps, record["modified_process"], record["error_steps"])
            question = None if record["modified_question"] == record["original_question"] else \
                record["modified_question"]
            verdict = validate_answer(taxonomy, category, trajectory, answer(question, *edits))
            assert verdict.accepted, (record["idx"], verdict.messages)
            assert [normalize_step(s) for s in verdict.modified_process] == \
                [normalize_step(s) for s in record["modified_process"]]
            assert verdict.error_steps == sorted(set(record["error_steps"]))
            checked += 1
    assert checked == 87  # the records accepted in full mode (tests/test_prmbench_verdicts.py)
