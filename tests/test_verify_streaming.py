"""Issue 30: `inject verify` holds what is in flight, not one thing per candidate or trajectory of the run."""
from __future__ import annotations

from test_verify import CANDIDATES, alive_while_judging, make_run

from injector.triage.verdicts import JudgeAnswer, read_verdicts


def test_a_pass_holds_the_original_critiques_in_flight_not_every_one_answered(scripted_server, tmp_path):
    """Each original solution's critique is asked once per trajectory and kind and shared by the candidates that
    need it; once answered it is kept on disk (the pass's scratch index), not in memory: while the judge answers,
    the process holds about as many judge answers as requests in flight (here one), not one per original answered
    (which grew with the run's trajectories)."""
    run = make_run(tmp_path / "run")
    before, alive = alive_while_judging(scripted_server, run, JudgeAnswer)
    assert len(read_verdicts(run)) == len(CANDIDATES)
    assert len(alive) >= 12 and max(alive) - before <= 3, (before, alive)
