"""Edit mode: apply a model's edits to the original steps, so untouched steps are byte-identical by construction
and the changed and error steps are known exactly."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from injector.answer.align import align_steps
from injector.model.codes import ReasonCode
from injector.answer.contract import Edit

@dataclass
class AppliedEdits:
    """The solution after the edits; indices 1-based (into the result unless named `original`)."""

    modified_process: list[str] = field(default_factory=list)
    modified_steps: list[int] = field(default_factory=list)
    """Replaced and inserted steps."""
    error_steps: list[int] = field(default_factory=list)
    """Error edits and flagged steps."""
    flagged_steps: list[int] = field(default_factory=list)
    """Unchanged steps marked as errors."""
    deleted_steps: list[int] = field(default_factory=list)
    """Original indices of deleted steps."""
    explanations: dict[int, str] = field(default_factory=dict)
    """Error step -> the explanation its edit carried."""
    warnings: list[str] = field(default_factory=list)
    problems: list[tuple[ReasonCode, str]] = field(default_factory=list)
    """(reason code, message) for edits that could not be applied."""

    def add(self, text: str, *, changed: bool, edit: Edit | None) -> None:
        """Append a step of the modified process (an error step when its edit says so)."""
        self.modified_process.append(text)
        position = len(self.modified_process)
        if changed:
            self.modified_steps.append(position)
        if edit is not None and edit.is_error:
            self.error_steps.append(position)
            if edit.explanation:
                self.explanations[position] = edit.explanation
            if not changed:
                self.flagged_steps.append(position)


def apply_edits(original: list[str], edits: list[Edit], *, normalize=lambda text: text) -> AppliedEdits:
    """Apply `edits` in original order; inserts after the same step keep their listed order.

    Edits out of range or in conflict are reported in `problems` and not applied. A replace whose text equals the
    original after `normalize` changes nothing: it is dropped with a warning.
    """
    result = AppliedEdits()
    size = len(original)
    on_step, inserts = _by_position(edits, size, result.problems)
    # A replace or insert without text (only a hand-built `Edit`) becomes an empty step, which validation refuses.
    for inserted in inserts[0]:
        result.add(inserted.text or "", changed=True, edit=inserted)
    for step in range(1, size + 1):
        acting = on_step.get(step, [])
        chosen = acting[0] if len(acting) == 1 else None  # conflicting edits are not applied
        if chosen is not None and chosen.op == "delete":
            result.deleted_steps.append(step)
        elif (chosen is not None and chosen.op == "replace"
              and normalize(chosen.text or "") != normalize(original[step - 1])):
            result.add(chosen.text or "", changed=True, edit=chosen)
        else:
            if chosen is not None and chosen.op == "replace":
                result.warnings.append(f"the replace of step {step} changes nothing; dropped")
                chosen = None
            result.add(original[step - 1], changed=False, edit=chosen)
        for inserted in inserts[step]:
            result.add(inserted.text or "", changed=True, edit=inserted)
    return result


def _by_position(edits: list[Edit], size: int, problems: list[tuple[ReasonCode, str]]
                 ) -> tuple[dict[int, list[Edit]], dict[int, list[Edit]]]:
    """The edits acting on each original step and the inserts after each; out-of-range indices and conflicting
    edits of one step are appended to `problems`."""
    on_step: dict[int, list[Edit]] = defaultdict(list)
    inserts: dict[int, list[Edit]] = defaultdict(list)
    out_of_range = []
    for edit in edits:
        # `Edit` checks that each op has its index; `None` here can only come from a hand-built edit.
        if edit.op == "insert":
            if edit.after is not None and 0 <= edit.after <= size:
                inserts[edit.after].append(edit)
            else:
                out_of_range.append(f"insert after {edit.after}")
        elif edit.step is not None and 1 <= edit.step <= size:
            on_step[edit.step].append(edit)
        else:
            out_of_range.append(f"{edit.op} of step {edit.step}")
    if out_of_range:
        problems.append((ReasonCode.INDEX_OUT_OF_RANGE, f"{'; '.join(out_of_range)}: the original solution has "
                         f"steps 1..{size} (insert after 0..{size}); indices refer to the original steps"))
    conflicts = sorted(step for step, acting in on_step.items() if len(acting) > 1)
    if conflicts:
        listed = ", ".join(f"step {s} ({' and '.join(e.op for e in on_step[s])})" for s in conflicts)
        problems.append((ReasonCode.EDIT_CONFLICT, f"{listed}: give at most one replace, delete or flag per step"))
    return on_step, inserts


def edits_from_full(original: list[str], modified: list[str], error_steps: list[int],
                    explanations: dict[int, str] | None = None) -> list[dict]:
    """Express a full-form answer as edits of `original` (worked examples; comparing the two contracts).

    The changed steps come from the same alignment the full-mode validator uses; an error step left unchanged
    becomes a flag. An error step's explanation (keyed by its 1-based position in `modified`) goes on its edit.
    """
    alignment = align_steps(original, modified)
    errors = set(error_steps)
    explanations = explanations or {}
    edits: list[dict] = []
    after = 0
    for j, text in enumerate(modified):
        if j in alignment.matched:
            after = alignment.matched[j] + 1
            edit = {"op": "flag", "step": after} if j + 1 in errors else None
        elif j in alignment.replaced:
            after = alignment.replaced[j] + 1
            edit = {"op": "replace", "step": after, "text": text, "error": j + 1 in errors}
        else:
            edit = {"op": "insert", "after": after, "text": text, "error": j + 1 in errors}
        if edit is not None:
            if j + 1 in errors and explanations.get(j + 1):
                edit["explanation"] = explanations[j + 1]
            edits.append(edit)
    edits.extend({"op": "delete", "step": i + 1} for i in alignment.deleted)
    return edits


def edit_answer_from_full(question: str, original: list[str], *, modified_question: str | None,
                          modified_process: list[str], error_steps: list[int], reason: str,
                          explanations: dict[int, str] | None = None) -> dict:
    """The edit-form answer (`{"question", "edits", "reason"}`) equivalent to a full-form answer."""
    changed_question = modified_question is not None and modified_question != question
    return {
        "question": modified_question if changed_question else None,
        "edits": edits_from_full(original, modified_process, error_steps, explanations),
        "reason": reason,
    }
