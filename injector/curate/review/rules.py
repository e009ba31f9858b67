"""The review app's rules for a decision on a candidate: the page's POST, `review --import` and `build` all pass
through `check_record` (called as `ReviewSession.check` / `check_record`)."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

from injector.answer.align import normalize_step
from injector.inject.validation import validate_answer
from injector.records.models import Candidate
from injector.util.errors import InjectorError
from injector.curate.review.store import Decision, apply_decision


class Refused(InjectorError):
    """A decision the app will not save; the message is shown to the reviewer as is."""


class Conflict(Refused):
    """A decision that would replace the reviewer's own without their say-so (unconfirmed, or made on a page that
    showed an older state): refused, never merged silently."""


def check_record(session: Any, run: int, candidate: Candidate, decision: Decision) -> Decision:
    """`ReviewSession.check` for a candidate record of run number `run` (what `build` reads itself): the one place
    the app's rules live. `session` gives the run's taxonomy (`category_named`, `taxonomy_for`)."""
    reason = decision.reason.strip() if isinstance(decision.reason, str) else decision.reason
    if decision.decision not in ("accept", "reject") or not isinstance(reason, str):
        raise Refused("a decision is accept or reject, with an optional text reason")
    if decision.decision == "reject":
        if not reason:
            raise Refused("give a reason for the rejection: type one or pick a quick reason")
        return replace(decision, reason=reason, corrected_error_steps=None, edited_steps=None)
    process = candidate.modified_process
    corrected, edits = decision.corrected_error_steps, decision.edited_steps
    if corrected is not None and not (isinstance(corrected, list) and all(
            isinstance(s, int) and not isinstance(s, bool) for s in corrected)):
        raise Refused("corrected_error_steps must be a list of step numbers")
    if edits is not None and not (isinstance(edits, dict) and all(isinstance(v, str) for v in edits.values())):
        raise Refused("edited_steps must map step numbers to text")
    changed: dict[int, str] = {}
    for step, text in (edits or {}).items():
        number = int(step) if str(step).isdigit() else 0
        if not 1 <= number <= len(process):
            raise Refused(f"step {step} does not exist: the solution has steps 1..{len(process)}")
        # A browser textarea may drop a leading newline or turn CRLF into LF; that is not an edit.
        if normalize_step(text) != normalize_step(process[number - 1]):
            changed[number] = text
    if corrected is not None:
        corrected = sorted(set(corrected))
        if corrected == sorted(candidate.error_steps):
            corrected = None
    checked = replace(decision, reason=reason, corrected_error_steps=corrected, edited_steps=changed or None)
    if corrected is not None or changed:
        _revalidate(session, run, candidate, checked)
    return checked


def _revalidate(session: Any, run: int, candidate: Candidate, decision: Decision) -> None:
    """Run the corrected record through `validate_answer` in full mode; a broken rule refuses it."""
    category = session.category_named(run, candidate.category)
    if category is None:
        raise Refused(f"category {candidate.category!r} is in neither the run's taxonomy nor the bundled one, "
                      "so a correction cannot be checked; accept or reject it as it is")
    if category.rules.multi_solution and decision.corrected_error_steps:
        raise Refused(f"{category.id} has no error steps: a different correct solution marks none")
    corrected = apply_decision(candidate, decision)
    # The whole record as the model's answer would have been: explanations included, which categories that
    # require them check (a correction once dropped them and was refused with `missing_explanation`).
    answer = corrected.as_answer(multi_solution=category.rules.multi_solution)
    verdict = validate_answer(session.taxonomy_for(run, category), category, candidate.source_trajectory(), answer)
    if verdict.codes:
        raise Refused("not saved, the corrected record breaks a rule: " + " ".join(
            f"[{code}]" for code in verdict.codes) + " " + "; ".join(verdict.messages))


