"""What makes a long solution quick to review: unchanged runs of steps collapsed to one line that expands, and a
header with the category's error-step rule, its "not this" line, the old and new final answers and the ground
truth, with a warning when the final answer changed but the last step is not marked an error."""
from __future__ import annotations

from injector.answer.final import final_answer_of_steps
from injector.records.models import Candidate
from injector.taxonomy import Category
from injector.curate.review.diff import e

COLLAPSE_MIN = 3
"""Runs of at least this many unchanged, unmarked steps collapse to one line."""

CHECKS = ("Every error step is marked, and no other step.",
          "It is an error of this category, not of the one its \"not this\" line names.",
          "The error is found by reasoning, not given away by its wording.",
          "The solution still reads naturally.")
"""What a reviewer checks on every candidate (its `checklist`), before the category's own question."""
CATEGORY_CHECKS = {
    "redundancy": "The added step is true and needless: removing it loses nothing.",
    "circular_logic": "A step assumes what it sets out to show, and the loop closes on quantities established earlier.",
    "counterfactual": "The false fact or assumption is stated as true, and every later use carries it.",
    "step_contradiction": "One step contradicts an earlier one, and the contradiction is not resolved.",
    "domain_inconsistency": "A rule is used outside the domain where it holds.",
    "confidence": "A false claim is asserted with certainty, and the false value is carried through every use.",
    "missing_condition": "The removed premise is named, the question stays answerable, and only steps that rely on "
                         "it are marked.",
    "deception": "The step looks right and is wrong: a near miss, not a blunder.",
    "multi_solution": "The new solution is correct, complete and different from the original.",
}
"""The bundled categories' own question (by category id); a category of another taxonomy gets the common ones."""


def checklist(category: Category | None) -> str:
    """A short list of boxes the reviewer ticks while reading (the page's own; nothing is saved)."""
    own = [CATEGORY_CHECKS[category.id]] if category is not None and category.id in CATEGORY_CHECKS else []
    if category is not None and category.rules.multi_solution:  # no error to find: only whether it reads right
        items = [*own, CHECKS[-1]]
    else:
        items = [*CHECKS, *own]
    boxes = "".join(f'<label><input type="checkbox" class="check"> {e(item)}</label>' for item in items)
    return f'<fieldset id="checklist"><legend>check</legend>{boxes}</fieldset>'


def collapse(rows: list[tuple[str, int | None]]) -> list[str]:
    """Table rows (HTML, and the step number of a plain unchanged step, else None) with each run of at least
    COLLAPSE_MIN plain steps hidden behind one row that says which steps it holds and shows them on a click."""
    out: list[str] = []
    run: list[tuple[str, int]] = []

    def flush() -> None:
        if len(run) < COLLAPSE_MIN:
            out.extend(html for html, _ in run)
        else:
            first, last = run[0][1], run[-1][1]
            out.append(f'<tr class="collapsed" data-run="{first}"><td colspan="5"><button type="button" '
                       f'class="expand" data-run="{first}">steps {first}–{last} unchanged ({len(run)}): show'
                       "</button></td></tr>")
            out.extend(html.replace("<tr ", f'<tr hidden data-in-run="{first}" ', 1) for html, _ in run)
        run.clear()

    for html, plain in rows:
        if plain is None:
            flush()
            out.append(html)
        else:
            run.append((html, plain))
    flush()
    return out


def answer_header(candidate: Candidate, shown: Candidate, category: Category | None) -> str:
    """The category's error-step rule and "not this" line, the final answers and ground truth, and a warning when
    the final answer changed but the last step is not marked."""
    old, new = final_answer_of_steps(candidate.original_process), final_answer_of_steps(shown.modified_process)
    facts = []
    if category is not None:
        facts.append(f'<p class="rule"><b>error steps:</b> {e(category.error_steps)}</p>')
        if category.not_this:
            facts.append(f'<p class="rule"><b>not this:</b> {e(category.not_this)}</p>')
    truth = candidate.ground_truth if candidate.ground_truth is not None else "not known"
    changed = old != new
    facts.append(f'<p class="answers"><b>final answer:</b> original <code id="answer-old">{e(old or "none")}</code>'
                 f' → modified <code id="answer-new">{e(new or "none")}</code>'
                 f'{" (changed)" if changed else " (unchanged)"}; ground truth <code>{e(truth)}</code></p>')
    last = len(shown.modified_process)
    if changed and shown.error_steps and last not in shown.error_steps:
        facts.append(f'<p class="warn" id="answer-warning">the final answer changed ({e(old or "none")} → '
                     f'{e(new or "none")}) but the last step ({last}) is not marked an error: check the error steps'
                     "</p>")
    return f'<section id="answers">{"".join(facts)}{checklist(category)}</section>'
