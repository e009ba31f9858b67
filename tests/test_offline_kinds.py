"""Offline redundancy and circular_logic (issue 25): redundant steps of several kinds (a re-derivation, a needless
check said with the step's own clause, a result restated later; never a bare inverse equation alone), and loops
of more than one shape whose operands the solution established earlier as quantities. Named inputs: the bundled
sample and the PRMBench fixtures' original solutions (tests/fixtures/prmbench, Apache-2.0)."""
from __future__ import annotations

import asyncio
import re
from collections import Counter

import pytest
from test_offline_semantics import prmbench_originals

from injector import OfflineEngine, Taxonomy, Trajectory, inject_one, load_trajectories
from injector.engines.offline.equations import inverse_equations
from injector.engines.offline.text import NUMBER
from injector.records.models import Candidate

# Bare arithmetic, as the review counted it (118 of 211 inserted steps): an opener, then only `$...$` holding
# numbers and operators ("We have $\\frac{50}{5} = 10$."); "$y = 31^2 + 1 = 962$" names what it restates.
BARE = re.compile(r"^(?:(?:so|and|right|now|then|we have|that means|we know that|ok)[, ]*)*\$([^$]+)\$\.?$", re.I)


def bare(text: str) -> bool:
    match = BARE.match(text.strip())
    return bool(match) and not re.search(r"[a-zA-Z]", re.sub(r"\\(?:d?frac|cdot|times|div)", "", match.group(1)))


@pytest.fixture(scope="module")
def sources() -> list[Trajectory]:
    return [*load_trajectories(), *prmbench_originals()]


def made(category_id: str, sources: list[Trajectory], samples: int = 3) -> list[tuple[Trajectory, Candidate]]:
    taxonomy = Taxonomy.load()
    category, engine, pairs = taxonomy.category(category_id), OfflineEngine(), []
    for trajectory in sources:
        for sample in range(samples):
            record = asyncio.run(inject_one(taxonomy, category, trajectory, engine, seed=0, sample=sample))
            if not isinstance(record, Candidate):
                break
            pairs.append((trajectory, record))
    return pairs


def test_redundancy_draws_several_kinds_and_never_a_bare_equation(sources):
    pairs = made("redundancy", sources)
    kinds = Counter(c.provenance.details["operator"] for _, c in pairs)
    assert {"rederive_another_way", "recover_an_operand", "restate_a_result"} <= set(kinds), kinds
    assert max(kinds.values()) <= 0.6 * len(pairs), kinds  # no one kind is most of the items
    inserted = [c.modified_process[k - 1] for _, c in pairs for k in c.error_steps]
    assert [text for text in inserted if bare(text)] == []
    assert bare("We have $\\frac{50}{5} = 10$.") and not bare("And we have $y = 31^2 + 1 = 962$.")
    # A restated result sits at least one step away from the step that derived it.
    for _, c in pairs:
        if c.provenance.details["operator"] == "restate_a_result":
            [k] = c.error_steps
            assert c.modified_process[k - 2] == c.original_process[k - 2]
            assert 2 <= k - 1 < len(c.original_process)


def test_an_operand_only_in_an_exponent_is_not_established():
    earlier = "Let $x^2$ be the area and 8 the side."
    assert inverse_equations("8 + 2", "10", earlier)  # loosely, the 2 of x^2 counted as written
    assert inverse_equations("8 + 2", "10", earlier, strict=True) == []
    assert inverse_equations("8 + 2", "10", earlier + " We add 2.", strict=True) == ["10 - 2 = 8", "10 - 8 = 2"]


def test_circular_loops_have_two_shapes_and_lean_only_on_established_quantities(sources):
    pairs = made("circular_logic", sources)
    shapes = Counter(len(c.error_steps) for _, c in pairs)
    assert set(shapes) == {2, 3} and min(shapes.values()) >= 0.25 * len(pairs), shapes
    for trajectory, c in pairs:
        first = c.error_steps[0]
        # Written before the loop as a number, a coefficient ("2x") included; an exponent or subscript is not.
        before = re.sub(r"[\^_](?:\{[^{}]*\}|\d+)", " ", " ".join([trajectory.question, *c.modified_process[: first - 1]]))
        established = set(re.findall(r"(?<![\d.])\d+(?:\.\d+)?(?!\d)", before))
        assumed = {m.group(0) for m in NUMBER.finditer(c.modified_process[first - 1])}
        for k in c.error_steps[1:]:
            for math in re.findall(r"\$([^$]+)\$", c.modified_process[k - 1]):
                # A value put back into an equation is evaluated there ("2 \\cdot 5 + 2 = 12 = 3 \\cdot 5 - 3"):
                # what stands right after its "=" is computed, not leaned on.
                computed = set(re.findall(r"=\s*(\d+(?:\.\d+)?)", math)) \
                    if c.provenance.details["operator"] == "assume_the_value" else set()
                loose = {m.group(0) for m in NUMBER.finditer(math)} - established - assumed - computed
                assert not loose, f"{c.id}: step {k} leans on {sorted(loose)}, established nowhere before"
