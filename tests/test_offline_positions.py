"""Where offline errors start and how long their steps run (issue 25, the cue probes' position and length):
options ordered by PRMBench's first-error positions (`engines/offline/positions.py`), and loop steps whose length
is drawn toward the solution's own."""
from __future__ import annotations

import random
from collections import Counter

from injector.engines.offline.positions import TARGET, Placed, ordered, place_weight, position_bin
from injector.engines.offline.wording import fitted


def _never(rng: random.Random) -> None:
    return None


def test_position_bins_are_tenths_of_the_solution():
    assert [position_bin(k, 10) for k in (1, 5, 10)] == [0, 4, 9]
    assert position_bin(1, 3) == 3 and position_bin(3, 3) == 9


def test_options_are_drawn_where_prmbench_puts_the_first_error():
    # confidence: PRMBench's first errors are in the ninth tenth 33 % of the time, in the first almost never.
    early, late = Placed(_never, 1, 10), Placed(_never, 9, 10)
    firsts = Counter(ordered([early, late], "confidence", random.Random(seed))[0] for seed in range(300))
    assert firsts[1] > 0.9 * 300  # a uniform shuffle puts the early one first half the time
    assert place_weight("confidence", 9, 10) == TARGET["confidence"][8]


def test_a_category_without_a_target_keeps_the_uniform_shuffle():
    options = [Placed(_never, k, 10) for k in range(1, 11)]
    assert sorted(ordered(options, "counterfactual", random.Random(3))) == list(range(10))
    firsts = Counter(ordered(options, "counterfactual", random.Random(seed))[0] for seed in range(500))
    assert min(firsts.values()) > 25  # every option comes first about a tenth of the time


def test_fitted_takes_the_way_nearer_the_solutions_step_length():
    short, long = "So $x = 4$.", "We know that the total number of marbles in the bag is $x = 4$, so we have that."
    picks = {fitted(random.Random(seed), [short, long], [len(long)] * 5) for seed in range(20)}
    assert picks == {long}


def _made(rng: random.Random) -> str:
    return "made"


def test_thinning_keeps_a_tenth_as_often_as_keep_says_and_is_deterministic():
    # step_contradiction's first errors fell in the last tenth three times as often as PRMBench's (dev part):
    # an option there is kept with KEEP's chance, an option in the fifth tenth always.
    from injector.engines.offline.positions import KEEP, thinned
    last, middle = thinned(Placed(_made, 10, 10), "step_contradiction"), thinned(Placed(_made, 5, 10),
                                                                                   "step_contradiction")
    assert (last.first, last.length) == (10, 10)
    kept = [last(random.Random(seed)) for seed in range(400)]
    assert abs(sum(k == "made" for k in kept) / 400 - KEEP["step_contradiction"][9]) < 0.07
    assert all(middle(random.Random(seed)) == "made" for seed in range(50))
    assert [last(random.Random(seed)) for seed in range(400)] == kept  # the same seed, the same choice
    assert thinned(Placed(_made, 10, 10), "confidence")(random.Random(0)) == "made"  # no table: untouched


def test_step_contradiction_options_late_in_the_solution_are_thinned():
    # prm_train_p1_118 (PRM800K, MIT licence; tests/test_offline_dead_end.py): step 9 of 11, in the ninth tenth,
    # conflicts with steps 5 and 6 and is a dead end; it is offered with KEEP's chance, not always.
    from injector.engines.offline.positions import KEEP
    from injector.engines.offline.step_contradiction import step_contradiction_options
    from test_offline_dead_end import CHECKED

    late = [o for o in step_contradiction_options(CHECKED) if o.first == 9]
    assert late and position_bin(9, 11) == 8 and KEEP["step_contradiction"][8] < 1
    made = [late[0](random.Random(seed)) is not None for seed in range(100)]
    assert 0.4 * 100 < sum(made) < 0.9 * 100
    assert made == [late[0](random.Random(seed)) is not None for seed in range(100)]  # seeded: the same again
