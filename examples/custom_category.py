"""A new error category defined in Python and run end to end with the offline engine (no model, no network).

The category, `unit_slip`, swaps the unit a step states its result in (dollars -> cents, ...). It comes with its
own template text (extending the bundled base template), its own offline operator, and its own check, whose
failures are reason codes like any other rule.

    python examples/custom_category.py [OUT_DIR]
"""
from __future__ import annotations

import re
import sys
import tempfile

from injector import Category, OfflineEngine, Rules, RunSpec, Taxonomy, load_trajectories, run
from injector.engines.offline import Perturbation, replace
from injector.records.models import RunCounts

UNITS = {"dollars": "cents", "cents": "dollars", "minutes": "seconds", "seconds": "minutes", "hours": "minutes",
         "meters": "centimeters", "miles": "kilometers", "feet": "inches"}
UNIT_WORD = re.compile(r"\b(" + "|".join(UNITS) + r")\b")
ANY_UNIT = re.compile(r"\b(" + "|".join({*UNITS, *UNITS.values()}) + r")\b")

TEMPLATE = """{% extends "_base.j2" %}
{% block guidance %}
How to make this error: state a computed quantity in the wrong unit (dollars for cents, minutes for seconds), keeping
the number, so the step reads naturally but is false.
{% endblock %}
"""


def unit_slip_options(trajectory):
    """One option per unit word in a step (not the final answer line)."""
    options = []
    for index, step in enumerate(trajectory.steps[:-1]):
        for match in UNIT_WORD.finditer(step):
            def option(rng, index=index, step=step, match=match):
                old, new = match.group(1), UNITS[match.group(1)]
                text = step[: match.start()] + new + step[match.end():]
                return Perturbation("swap_unit", [replace(index + 1, text)],
                                    f"Step {index + 1} states its result in {new} instead of {old}.")
            options.append(option)
    return options


def check_unit_changed(trajectory, verdict):
    """The category's own rule: every error step must differ from its original by a unit word."""
    for step in verdict.error_steps:
        if not ANY_UNIT.search(verdict.modified_process[step - 1]):
            yield "no_unit_in_error", f"error step {step} states no unit; swap the unit of a result"


def main(out: str) -> RunCounts:
    taxonomy = Taxonomy.load()  # the bundled PRMBench taxonomy, extended in code
    taxonomy.add(Category(
        id="unit_slip", name="Unit Consistency", domain="soundness", template_text=TEMPLATE,
        definition="Make one step state a computed quantity in the wrong unit.",
        error_steps="the step with the wrong unit", not_this="a wrong number (that is counterfactual)",
        rules=Rules(max_changes=1), check=check_unit_changed,
    ))
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["unit_slip"]), out=out, limit=10)
    result = run(load_trajectories(), spec, OfflineEngine(operators={"unit_slip": unit_slip_options}))
    counts = result.manifest.counts
    print(f"{out}: {counts.candidates} candidates, {counts.rejects} rejects {counts.codes}")
    return counts


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="unit_slip_"))
