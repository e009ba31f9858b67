"""Where an offline error starts: a unit's options ordered so that the first error step's place in the solution
(step number / solution length) is spread as in PRMBench's GPT-4o data of the same category.

Without it an operator's options are taken in a uniform shuffled order, and the error lands where the operator
finds most places to work (redundancy's computations cluster late in a solution): a probe that sees only a step's
position (`inject stats --cues`) then finds the error steps. Each option says where its first error step will be
(`Placed`); the engine draws the order by weighted sampling without replacement, the weight of an option being its
tenth's share in `TARGET` divided by the number of the unit's options in that tenth, so each tenth is drawn as
often as PRMBench's first errors fall in it (among the tenths the unit offers at all).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from injector.engines.offline.text import Option, Perturbation

BINS = 10
# The share of PRMBench's solutions whose first error step is in each tenth of the solution, on the dev part's
# problems of its train-phase-1 GPT-4o files: `python bench/prmbench_positions.py PRMBENCH_TRAIN_P1_DIR`.
TARGET: dict[str, tuple[float, ...]] = {
    "redundancy": (0.010, 0.059, 0.103, 0.103, 0.201, 0.191, 0.142, 0.157, 0.020, 0.015),  # 204 solutions
    "circular_logic": (0.015, 0.054, 0.143, 0.177, 0.227, 0.192, 0.089, 0.079, 0.020, 0.005),  # 203 solutions
    "step_contradiction": (0.010, 0.015, 0.039, 0.054, 0.132, 0.103, 0.152, 0.225, 0.191, 0.078),  # 204 solutions
    "confidence": (0.000, 0.015, 0.015, 0.005, 0.064, 0.045, 0.084, 0.178, 0.327, 0.267),  # 202 solutions
}
FLOOR = 0.01  # a tenth PRMBench never uses still comes up, last, rather than never
# The chance an option whose first error step falls in each tenth is kept (else it is not applicable and the next
# one is tried), where ordering cannot spread the errors: most units offer one to three options, all late.
# step_contradiction: with ordering alone its first errors fell in the last tenth in 33 % of solutions (dev part,
# seeds 0-5 pooled, 149 solutions) against 8 % of PRMBench's, and in the ninth in 23 % against 19 %; with these
# chances 12 % and 29 % (112 solutions; position AUC at matched size 0.70 against GPT-4o's 0.63 ± 0.07, was 0.73
# against 0.65). Keeping the fifth to ninth tenths by PRMBench's shares over ours as well (0.53, 0.63, 1, 0.55,
# 0.16) cost a further quarter of the items for no gain (0.70 against 0.61 ± 0.09, 86 solutions).
KEEP: dict[str, tuple[float, ...]] = {
    "step_contradiction": (1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.7, 0.25),
}


@dataclass
class Placed:
    """An option with the place of its first error step: step `first` (1-based) of a solution of `length` steps."""

    make: Option
    first: int
    length: int

    def __call__(self, rng: random.Random) -> Perturbation | None:
        return self.make(rng)


def position_bin(first: int, length: int) -> int:
    """The tenth of the solution step `first` (1-based) of `length` falls in."""
    return min(BINS - 1, max(0, math.ceil(BINS * first / length) - 1))


def place_weight(category_id: str, first: int, length: int) -> float:
    """How often PRMBench's first error of this category falls in the tenth of step `first` of `length`."""
    target = TARGET.get(category_id)
    return 1.0 if target is None else max(target[position_bin(first, length)], FLOOR)


def ordered(options: Sequence[Option], category_id: str, rng: random.Random) -> list[int]:
    """The options' indices in the order the engine tries them: weighted by `TARGET` when the category has a
    target and its options are placed, else a uniform shuffle."""
    target = TARGET.get(category_id)
    order = list(range(len(options)))
    if target is None or not options:
        rng.shuffle(order)
        return order
    bins = [position_bin(o.first, o.length) if isinstance(o, Placed) else None for o in options]
    per_bin = {b: bins.count(b) for b in set(bins) if b is not None}
    known = [max(target[b], FLOOR) / per_bin[b] for b in bins if b is not None]
    neutral = sum(known) / len(known) if known else 1.0  # an option that does not say where it is
    weights = [neutral if b is None else max(target[b], FLOOR) / per_bin[b] for b in bins]
    # Efraimidis-Spirakis: sorting by u ** (1 / w) draws without replacement with probabilities proportional to w.
    keys = [rng.random() ** (1 / w) for w in weights]
    return sorted(order, key=lambda i: -keys[i])


def thinned(option: Placed, category_id: str) -> Placed:
    """`option`, kept with the chance `KEEP` gives the tenth of its first error step (drawn after it is made, from
    the same seeded generator, so what is kept is made as before), else not applicable."""
    keep = KEEP.get(category_id)
    if keep is None:
        return option
    chance = keep[position_bin(option.first, option.length)]

    def kept(rng: random.Random) -> Perturbation | None:
        made = option.make(rng)
        return made if made is not None and rng.random() < chance else None
    return Placed(kept, option.first, option.length)
