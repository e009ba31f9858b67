"""Validation: derive what an answer changed from the text itself, then apply the category's rules.

Nothing the model says about its own edit is trusted: the changed steps are computed by aligning the normalized
original and modified steps, and the declared `modified_steps` are only checked against that.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from injector.answer.align import align_steps, normalize_question, normalize_step
from injector.answer.final import answers_equivalent, final_answer_of_steps
from injector.model.codes import ReasonCode
from injector.answer.contract import EditAnswer, FullAnswer, MultiSolutionAnswer
from injector.answer.edits import apply_edits
from injector.taxonomy import Category, Rules, Taxonomy
from injector.model.trajectory import Trajectory


@dataclass
class Verdict:
    """The validator's outcome for one answer: accepted when `codes` is empty."""

    codes: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    modified_question: str = ""
    modified_process: list[str] = field(default_factory=list)
    modified_steps: list[int] = field(default_factory=list)
    """1-based, computed from the text (never the model's declaration)."""
    error_steps: list[int] = field(default_factory=list)
    deleted_steps: list[int] = field(default_factory=list)
    """1-based indices into the ORIGINAL steps."""
    explanations: dict[int, str] = field(default_factory=dict)
    """Error step -> explanation, when the answer gave one (edit mode)."""

    @property
    def accepted(self) -> bool:
        return not self.codes

    def fail(self, code: ReasonCode | str, message: str) -> None:
        """Add a failed rule: a `ReasonCode`, or a hook's own code (a string); records keep the plain string."""
        code = str(code)
        if code not in self.codes:
            self.codes.append(code)
        self.messages.append(message)


def _leak_pattern(phrases: list[str]) -> re.Pattern[str] | None:
    parts = []
    for phrase in phrases:
        escaped = re.escape(phrase)
        # Whole words: a word boundary only where the phrase itself starts or ends with a word character.
        start = r"(?<!\w)" if phrase[:1].isalnum() else ""
        end = r"(?!\w)" if phrase[-1:].isalnum() else ""
        parts.append(f"{start}{escaped}{end}")
    return re.compile("|".join(parts), re.IGNORECASE) if parts else None


def _fmt(indices: list[int]) -> str:
    return ", ".join(str(i) for i in indices)


def validate_answer(
    taxonomy: Taxonomy,
    category: Category,
    trajectory: Trajectory,
    answer: FullAnswer | MultiSolutionAnswer | EditAnswer,
) -> Verdict:
    """Check `answer` against `trajectory` under `category`'s rules; every failing rule adds its code."""
    if isinstance(answer, EditAnswer):
        verdict = _validate_edits(taxonomy, category, trajectory, answer)
    else:
        verdict = _validate_full(taxonomy, category, trajectory, answer)
    if verdict.modified_process:
        # The category's own checks (a hook, or a Python callable) come last and see the derived verdict.
        for code, message in category.extra_checks(trajectory, verdict):
            verdict.fail(code, message)
    return verdict


def _validate_full(
    taxonomy: Taxonomy, category: Category, trajectory: Trajectory, answer: FullAnswer | MultiSolutionAnswer
) -> Verdict:
    rules = category.rules
    verdict = Verdict()
    original = list(trajectory.steps)
    modified = list(answer.modified_process)
    if not modified:
        verdict.fail(ReasonCode.SCHEMA, "modified_process is empty: return the full list of steps")
        return verdict

    size = len(modified)
    declared = answer if isinstance(answer, FullAnswer) and not rules.multi_solution else None
    declared_modified = list(declared.modified_steps) if declared else []
    declared_errors = list(declared.error_steps) if declared else []
    out_of_range = sorted({i for i in [*declared_modified, *declared_errors] if not 1 <= i <= size})
    if out_of_range:
        verdict.fail(
            ReasonCode.INDEX_OUT_OF_RANGE,
            f"index {_fmt(out_of_range)} is outside 1..{size}: indices are 1-based positions in modified_process",
        )
    empty = [k + 1 for k, step in enumerate(modified) if not normalize_step(step)]
    if empty:
        verdict.fail(ReasonCode.EMPTY_STEP, f"step {_fmt(empty)} is empty: remove it or give it text")

    alignment = align_steps(original, modified)
    # Unchanged steps keep the source's exact text, whatever cosmetic drift the model introduced.
    for j, i in alignment.matched.items():
        modified[j] = original[i]
    verdict.modified_process = modified
    if rules.multi_solution:
        # A new solution replaces the old one wholesale: deletions and step indices mean nothing here.
        verdict.modified_question = trajectory.question
        _check_multi_solution(verdict, trajectory, size)
        return verdict

    assert isinstance(answer, FullAnswer)
    verdict.modified_steps = [j + 1 for j in alignment.changed]
    verdict.error_steps = sorted({i for i in declared_errors if 1 <= i <= size})
    verdict.deleted_steps = [i + 1 for i in sorted(alignment.deleted)]
    verdict.explanations = {int(k): v for k, v in (answer.explanations or {}).items()
                            if str(k).isdigit() and 1 <= int(k) <= size and v}
    undeclared = sorted(set(verdict.modified_steps) - set(declared_modified))
    if undeclared:
        verdict.fail(
            ReasonCode.UNDECLARED_CHANGE,
            f"you changed step {_fmt(undeclared)} but did not list it in modified_steps; "
            "either restore its original text exactly or declare it",
        )
    _check_rules(verdict, taxonomy, category, trajectory, answer.modified_question)
    return verdict


def _validate_edits(taxonomy: Taxonomy, category: Category, trajectory: Trajectory, answer: EditAnswer) -> Verdict:
    """Edit mode: the changed and error steps are what the edits say, applied to the original text."""
    applied = apply_edits(list(trajectory.steps), answer.edits, normalize=normalize_step)
    verdict = Verdict(
        modified_process=applied.modified_process,
        modified_steps=applied.modified_steps,
        error_steps=applied.error_steps,
        deleted_steps=applied.deleted_steps,
        explanations=applied.explanations,
        warnings=list(applied.warnings),
    )
    for code, message in applied.problems:
        verdict.fail(code, message)
    empty = [k for k in applied.modified_steps if not normalize_step(applied.modified_process[k - 1])]
    if empty:
        verdict.fail(ReasonCode.EMPTY_STEP, f"step {_fmt(empty)} of the result is empty: give its edit a text")
    question = trajectory.question if answer.question is None else answer.question
    if applied.flagged_steps and not category.rules.allows_error_on_unchanged_step(
            normalize_question(question) != normalize_question(trajectory.question)):
        # Reported here, in the edits' own terms, so the shared rule below does not say it twice.
        when = " unless the question is changed" if category.rules.allow_error_on_unchanged_step else ""
        verdict.fail(
            ReasonCode.ERROR_ON_UNCHANGED_STEP,
            f"{category.id} does not allow flagging an unchanged step as an error{when}: an error step must be a "
            "replace or insert with \"error\": true",
        )
    _check_rules(verdict, taxonomy, category, trajectory, question, check_unchanged_errors=False)
    return verdict


def _check_rules(
    verdict: Verdict,
    taxonomy: Taxonomy,
    category: Category,
    trajectory: Trajectory,
    modified_question: str,
    *,
    check_unchanged_errors: bool = True,
) -> None:
    """The rules both output modes share, on a verdict whose steps and indices are already derived."""
    question_edited = normalize_question(modified_question) != normalize_question(trajectory.question)
    _check_error_steps(verdict, category.rules, question_edited, check_unchanged_errors)
    verdict.modified_question = modified_question if question_edited else trajectory.question
    if question_edited and not category.rules.allow_question_edit:
        verdict.fail(
            ReasonCode.QUESTION_EDIT_NOT_ALLOWED,
            f"the question was changed, which {category.id} does not allow: return it exactly as given",
        )
    _check_changes(verdict, category, trajectory)
    _check_label_leaks(verdict, taxonomy, category)


def _check_error_steps(verdict: Verdict, rules: Rules, question_edited: bool, check_unchanged_errors: bool) -> None:
    """Deleted steps (a warning, or refused), and error steps that are there and are steps the answer changed."""
    if verdict.deleted_steps:
        verdict.warnings.append(f"deleted original steps: {_fmt(verdict.deleted_steps)}")
        if not rules.allow_deletions:
            verdict.fail(
                ReasonCode.DELETION_NOT_ALLOWED,
                f"original step {_fmt(verdict.deleted_steps)} was deleted: this category keeps every original step",
            )
    if not verdict.error_steps:
        verdict.fail(ReasonCode.NO_ERROR_STEPS, "there is no error step: mark every erroneous step")
    if check_unchanged_errors and not rules.allows_error_on_unchanged_step(question_edited):
        unchanged_errors = sorted(set(verdict.error_steps) - set(verdict.modified_steps))
        if unchanged_errors:
            verdict.fail(
                ReasonCode.ERROR_ON_UNCHANGED_STEP,
                f"error step {_fmt(unchanged_errors)} is unchanged from the original, which is correct; "
                "an error step must be a step you changed or inserted",
            )


def _check_changes(verdict: Verdict, category: Category, trajectory: Trajectory) -> None:
    """How many steps changed, the explanations asked for, and the final answer kept or changed as required."""
    rules, changed = category.rules, verdict.modified_steps
    if len(changed) < rules.min_changes:
        verdict.fail(ReasonCode.TOO_FEW_CHANGES, f"{len(changed)} step(s) changed; {category.id} needs at least "
                     f"{rules.min_changes}")
    if rules.max_changes is not None and len(changed) > rules.max_changes:
        verdict.fail(ReasonCode.TOO_MANY_CHANGES, f"{len(changed)} steps changed; {category.id} allows at most "
                     f"{rules.max_changes}: change fewer steps")
    if rules.require_explanations:
        unexplained = [k for k in verdict.error_steps if not verdict.explanations.get(k)]
        if unexplained:
            verdict.fail(ReasonCode.MISSING_EXPLANATION, f"error step {_fmt(unexplained)} has no explanation: give each "
                         "error step an explanation of what is wrong")
    if rules.final_answer != "any":
        _check_final_answer(verdict, trajectory, keep=rules.final_answer == "keep")


def _check_label_leaks(verdict: Verdict, taxonomy: Taxonomy, category: Category) -> None:
    """A changed step must not announce its own error with one of the taxonomy's leak phrases."""
    changed = verdict.modified_steps
    pattern = _leak_pattern(taxonomy.leak_phrases(category))
    if pattern:
        found = [(k, pattern.search(verdict.modified_process[k - 1])) for k in changed]
        leaks = [(k, m.group(0)) for k, m in found if m]
        if leaks:
            verdict.fail(
                ReasonCode.LABEL_LEAK,
                "a changed step announces its own error ("
                + "; ".join(f"step {k}: {word!r}" for k, word in leaks)
                + "): the step must read as plausible work; explain the error only in `reason`",
            )


def _check_final_answer(verdict: Verdict, trajectory: Trajectory, *, keep: bool) -> None:
    original = trajectory.answer or final_answer_of_steps(list(trajectory.steps))
    new = final_answer_of_steps(verdict.modified_process)
    if original is None or new is None:
        verdict.warnings.append("final answer not found: the keep/change rule was not checked")
        return
    same = answers_equivalent(original, new)
    if keep and not same:
        verdict.fail(ReasonCode.ANSWER_CHANGED, f"the final answer changed from {original!r} to {new!r}; this category "
                     "keeps the original final answer")
    elif not keep and same:
        verdict.fail(ReasonCode.ANSWER_UNCHANGED, f"the final answer is still {new!r}; this category needs the error to "
                     "change the final answer")


def _check_multi_solution(verdict: Verdict, trajectory: Trajectory, size: int) -> None:
    original_answer = trajectory.answer or final_answer_of_steps(list(trajectory.steps))
    new_answer = final_answer_of_steps(verdict.modified_process)
    if original_answer is None or new_answer is None:
        missing = "the new solution's" if new_answer is None else "the original solution's"
        verdict.fail(
            ReasonCode.ANSWER_UNKNOWN,
            f"{missing} final answer cannot be determined: end the last step with `# Answer` and the answer",
        )
    elif not answers_equivalent(original_answer, new_answer):
        verdict.fail(
            ReasonCode.ANSWER_MISMATCH,
            f"the new solution's final answer {new_answer!r} is not equivalent to the original's {original_answer!r}",
        )
    original_steps = {normalize_step(step) for step in trajectory.steps}
    repeated = sum(normalize_step(step) in original_steps for step in verdict.modified_process)
    if repeated * 2 > size:
        verdict.fail(
            ReasonCode.NOT_DIFFERENT,
            f"{repeated} of the {size} new steps repeat original steps: write a different solution",
        )
