"""The reason codes a unit can be rejected with: every code the toolkit emits, each with one line of meaning.

Records keep the plain strings (`rejects.jsonl` `codes`, a candidate's `provenance.attempts`), so the codes are a
`str` enum: a member equals, and serializes as, its value. A taxonomy hook's own checks may add codes of their own
(free strings, not listed here). The README's table of codes is generated from this catalogue (`reason_code_table`)
and a test keeps the two equal.
"""
from __future__ import annotations

from enum import Enum


class ReasonCode(str, Enum):
    """A reason code and its meaning, in the order the validator reports them (then parsing, then the engine)."""

    meaning: str

    def __new__(cls, value: str, meaning: str) -> "ReasonCode":
        member = str.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member

    def __str__(self) -> str:  # the bare code in messages and records, on every Python version
        return self.value

    __hash__ = str.__hash__  # Enum hashes the name: a member must find its plain-string key in a dict, and back

    PARSE_ERROR = "parse_error", "the answer is not one readable JSON object (empty, too long or too deeply nested)"
    SCHEMA = "schema", "the JSON object has the wrong shape: a field missing, of the wrong type, or empty"
    INDEX_OUT_OF_RANGE = ("index_out_of_range", "a declared index outside `1..len(modified_process)` (edits: "
                          "outside the original steps)")
    EMPTY_STEP = "empty_step", "a step empty after normalization"
    UNDECLARED_CHANGE = ("undeclared_change", "full mode: a step changed (after normalizing numbering, whitespace, "
                         "trailing periods) but not declared")
    EDIT_CONFLICT = "edit_conflict", "edit mode: more than one of replace / delete / flag on the same step"
    NO_ERROR_STEPS = "no_error_steps", "no error step (all but `multi_solution`)"
    ERROR_ON_UNCHANGED_STEP = ("error_on_unchanged_step", "an error step the injection did not change (allowed only "
                               "in `missing_condition`, and in `deception` with an edited question)")
    QUESTION_EDIT_NOT_ALLOWED = ("question_edit_not_allowed", "the question changed (allowed only in "
                                 "`missing_condition` and `deception`)")
    LABEL_LEAK = ("label_leak", "a changed step announces its error (\"incorrectly\", \"(error\", \"by mistake\", "
                  "...: `label_leak_phrases` in the taxonomy)")
    DELETION_NOT_ALLOWED = ("deletion_not_allowed", "an original step deleted where the category forbids it "
                            "(otherwise a warning)")
    TOO_FEW_CHANGES = "too_few_changes", "fewer changed steps than the category's `min_changes`"
    TOO_MANY_CHANGES = "too_many_changes", "more changed steps than the category's `max_changes`"
    ANSWER_CHANGED = "answer_changed", "the final answer changed in a category that keeps it (`final_answer: keep`)"
    ANSWER_UNCHANGED = ("answer_unchanged", "the final answer is unchanged in a category whose error must change it "
                        "(`final_answer: change`)")
    MISSING_EXPLANATION = ("missing_explanation", "an error step without an explanation, in a category that "
                           "requires them (`require_explanations`)")
    ANSWER_UNKNOWN = "answer_unknown", "`multi_solution`: the final answer of the new or the original solution not found"
    ANSWER_MISMATCH = "answer_mismatch", "`multi_solution`: the new final answer is not equivalent to the original's"
    NOT_DIFFERENT = "not_different", "`multi_solution`: more than half the new steps repeat original steps"
    NOT_APPLICABLE = ("not_applicable", "nothing to work on: the offline operator found no place (or no further "
                      "sample) in this trajectory, or the category needs an image the trajectory lacks")
    ANSWER_TOO_LARGE = ("answer_too_large", "the provider's answer is larger than `--max-answer-bytes` (8 MB by "
                        "default): refused, not read whole")
    PROVIDER_ERROR = "provider_error", "the provider refused the request (400, 404, context window exceeded), with its message"
    TRANSIENT_FAILURE = ("transient_failure", "429 / 5xx / timeouts still failing after retries with exponential "
                         "backoff and jitter; a rerun of the same command retries the unit")


def reason_code_table() -> str:
    """The Markdown table of every code and its meaning (the README's, kept equal to this by a test)."""
    rows = [f"| `{code.value}` | {code.meaning} |" for code in ReasonCode]
    return "\n".join(["| code | meaning |", "|---|---|", *rows])
