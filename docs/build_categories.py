"""Writes docs/categories.md: each category beside PRMBench's definition, a worked example, and what a reviewer
checks. The definitions and examples come from the bundled taxonomy, so the page cannot drift from the prompts
(tests/test_prompts.py compares it with this script's output).

    python docs/build_categories.py
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from injector.inject.examples import edit_form  # noqa: E402
from injector.taxonomy import Taxonomy  # noqa: E402
from injector.answer.align import align_steps  # noqa: E402

# PRMBench's definitions, restated from its generation prompts (mr_annotate/build_data/prompts in its repository).
PRMBENCH = {
    "redundancy": "A step that can be removed without affecting correctness: A → B becomes A → C → B.",
    "circular_logic": "\"A specific form of redundancy\": the chain starts at S, goes through A, B … and loops back "
                      "to S (S → A → B → S).",
    "counterfactual": "A statement that contradicts established ground truth: an outdated theory, a theory with a "
                      "critical constraint omitted, an erroneous assumption.",
    "step_contradiction": "A step that conflicts with another step of the same chain ($S_i \\perp S_j$).",
    "domain_inconsistency": "\"A special type of counterfactual\": a statement or theory valid in other domains or "
                            "cases, used where it is not valid.",
    "confidence": "\"A special type of counterfactual\": an incorrect statement presented with unwarranted "
                  "certainty.",
    "missing_condition": "Critical premises, assumptions or necessary conditions are absent; a case analysis or "
                         "further investigation is required, and the solution proceeds with the standard method "
                         "as if it were not.",
    "deception": "Statements that appear correct but are subtly altered to introduce inaccuracies while keeping "
                 "the illusion of correctness (\"deception or traps\").",
    "multi_solution": "A different correct solution reaching the same final answer.",
}

REVIEW = {
    "redundancy": "Delete each error step in your head: is the solution still complete and correct? Is the inserted "
                  "step true? Does its wording give it away (\"check\", \"again\", \"verify\")?",
    "circular_logic": "Does the result now rest only on itself (the real derivation gone)? Is it a loop, not an "
                      "honest re-check (that would be redundancy)? Is the final answer unchanged?",
    "counterfactual": "Is the injected step false *knowledge* (formula, theorem, definition, constant, property), "
                      "not an arithmetic slip? Do the later steps follow the false result to the `# Answer`? Are "
                      "all steps whose statements are now false marked, and no true step?",
    "step_contradiction": "Can you point at the two steps that disagree? Is the earlier one unchanged and true? Do "
                          "the later steps carry the conflicting value?",
    "domain_inconsistency": "Name the domain the rule is valid in and the domain it is used in. An unchecked "
                            "condition inside one domain (division by what may be zero, a dropped ±) belongs to "
                            "missing condition.",
    "confidence": "Is the confident step really false? Is it asserted in place of a justification, or a confident "
                  "false \"correction\"? Would a certainty phrase alone predict the label (look at the steps "
                  "marked correct)?",
    "missing_condition": "Which prerequisite does the standard method need, and why does it not hold? Is the "
                         "question still natural and answerable (no deleted given)? Are the unchanged steps that "
                         "go wrong flagged?",
    "deception": "Does the wrong step look right at a glance (near-miss), or does an edited question make a "
                 "familiar method invalid (trap)? Is the error subtle but certain, not obvious?",
    "multi_solution": "Is it a genuinely different route (not a paraphrase or reordering)? Is every step correct, "
                      "and the final answer the same?",
}


def flat(step: str) -> str:
    """One line of Markdown: the `# Answer` block inline, so it does not become a heading."""
    return step.replace("\n\n# Answer\n\n", " — `# Answer` ").replace("\n", " ")


def example_block(category, example) -> list[str]:
    lines = [f"Question: {example.question}", ""]
    if example.answer.modified_question:
        lines += [f"Question after the change: {example.answer.modified_question}", ""]
    if category.rules.multi_solution:
        lines += [f"Original solution: {len(example.steps)} steps. New solution:", ""]
        lines += [f"- {k}: {flat(step)}" for k, step in enumerate(example.answer.modified_process, 1)]
        return [*lines, "", f"Reason: {example.answer.reason}"]
    alignment = align_steps(list(example.steps), list(example.answer.modified_process))
    errors = set(example.answer.error_steps)
    for k, step in enumerate(example.answer.modified_process, 1):
        j = k - 1
        if j in alignment.matched:
            mark = "error (unchanged)" if k in errors else "unchanged"
        elif j in alignment.replaced:
            mark = "changed, error" if k in errors else "changed, correct"
            lines.append(f"- {k} (before): ~~{flat(example.steps[alignment.replaced[j]])}~~")
        else:
            mark = "inserted, error" if k in errors else "inserted, correct"
        lines.append(f"- {k}: {flat(step)} *({mark})*")
    edits = edit_form(category, example)["edits"]
    return [*lines, "", f"Edit form: {len(edits)} edit(s). Reason: {example.answer.reason}"]


def build() -> str:
    taxonomy = Taxonomy.load()
    out = ["# The nine categories, side by side", "",
           "Generated by `python docs/build_categories.py` from `taxonomy.yaml` and `prompts/examples/`. For each "
           "category: PRMBench's definition (in our words), ours (what the prompt says), which steps are error "
           "steps, a worked example (the long one the prompt shows; unchanged steps shown once, a changed step "
           "after its struck-through original), and what a reviewer should check.", "",
           "Rules every injected category shares (`prompts/_base.j2`): the error **propagates** — every later step "
           "that depends on the changed result is rewritten consistently with it, through the final `# Answer` "
           "(redundancy and circular logic keep the final answer); the **error steps** are the injected step and "
           "every later step whose statement is false about the problem as posed; a content-free step (\"Right.\", "
           "\"Exactly.\") never is, even right after a false step. Only missing condition, and deception with an "
           "edited question, may mark unchanged steps as errors. A unit never sees its own problem as a worked "
           "example: an example whose question equals the unit's (compared as normalised text) is left out.", ""]
    for category in taxonomy.categories:
        long = max(category.examples, key=lambda e: len(e.steps))
        out += [f"## {category.id} ({category.name}, {category.domain})", "",
                f"**PRMBench**: {PRMBENCH[category.id]}", "",
                f"**Ours**: {category.definition}", ""]
        if not category.rules.multi_solution:
            later = "" if category.rules.final_answer == "keep" else ", and every later step the error makes false"
            out += [f"**Error steps**: {category.error_steps}{later}.", ""]
        out += [f"**Not this**: {category.not_this}.", "", "**Worked example**", "", *example_block(category, long),
                "", f"*{long.source}*" if long.source else "", "", f"**Reviewer checks**: {REVIEW[category.id]}", ""]
    return "\n".join(out).rstrip() + "\n"


if __name__ == "__main__":
    (ROOT / "docs" / "categories.md").write_text(build(), encoding="utf-8")
