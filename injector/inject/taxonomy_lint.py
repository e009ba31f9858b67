"""`inject taxonomy validate`: load a taxonomy, render every template in every mode, import and call every hook,
check every worked example with the real validator, and report every problem (not just the first)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from injector.util.errors import UserError
from injector.inject.examples import example_problems
from injector.inject.prompts import render_messages
from injector.taxonomy import Taxonomy
from injector.model.trajectory import Trajectory
from injector.inject.validation import Verdict

SAMPLE = Trajectory(
    id="sample",
    question="A shop sells pens at $\\$2$ each. How much do 3 pens cost, in dollars?",
    steps=["Each pen costs 2 dollars.", "So 3 pens cost $3 \\cdot 2 = 6$ dollars.\n\n# Answer\n\n6"],
    answer="6",
    images=[],
)


def check_taxonomy(source: str | Path | None) -> tuple[Taxonomy | None, list[str]]:
    """The loaded taxonomy (None if it does not load) and every problem found."""
    try:
        taxonomy = Taxonomy.load(source)
    except UserError as exc:
        return None, [str(exc)]
    problems: list[str] = []
    for category in taxonomy.categories:
        where = f"category {category.id!r}"
        try:
            hook = category.loaded_hook()
        except UserError as exc:
            problems.append(f"{where}: {exc}")
            continue
        for mode in ("edits", "full"):
            try:
                messages = render_messages(taxonomy, category, SAMPLE, output_mode=mode)
            except Exception as exc:  # noqa: BLE001 - a template or a hook failing: reported, linting goes on
                problems.append(f"{where} ({mode} mode): {exc}")
                continue
            if not all(m["content"].strip() for m in messages):
                problems.append(f"{where} ({mode} mode): the template renders an empty message")
        if hook is not None and hasattr(hook, "check"):
            problems.extend(_try_check(where, category, hook))
        for number, example in enumerate(category.examples, 1):
            problems.extend(f"{where} example {number}: {problem}"
                            for problem in example_problems(taxonomy, category, example))
    return taxonomy, problems


def _try_check(where: str, category: Any, hook: Any) -> list[str]:
    verdict = Verdict(modified_process=list(SAMPLE.steps), modified_question=SAMPLE.question)
    try:
        failures = list(hook.check(SAMPLE, verdict) or [])
    except Exception as exc:  # noqa: BLE001 - the hook's own bug: reported as a problem, with its type
        return [f"{where}: hook check raised {type(exc).__name__}: {exc}"]
    bad = [f for f in failures if not (isinstance(f, (tuple, list)) and len(f) == 2)]
    return [f"{where}: hook check must return (code, message) pairs, got {bad[0]!r}"] if bad else []
