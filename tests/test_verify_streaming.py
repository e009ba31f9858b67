"""Issue 30: `inject verify` holds what is in flight, not one thing per candidate or trajectory of the run."""
from __future__ import annotations

import gc

from scripted_server import Reply
from test_verify import CANDIDATES, judge, judge_table, make_run, verify_cli

from injector.triage.verdicts import JudgeAnswer, read_verdicts


def test_a_pass_holds_the_original_critiques_in_flight_not_every_one_answered(scripted_server, tmp_path):
    """Each original solution's critique is asked once per trajectory and kind and shared by the candidates that
    need it; once answered it is kept on disk (the pass's scratch index), not in memory: while the judge answers,
    the process holds about as many judge answers as requests in flight (here one), not one per original answered
    (which grew with the run's trajectories)."""
    run = make_run(tmp_path / "run")
    answer = judge(judge_table())
    alive: list[int] = []

    def live() -> int:
        gc.collect()  # what earlier tests left unreachable is not held by verify
        return sum(isinstance(thing, JudgeAnswer) for thing in gc.get_objects())

    def counting(request: dict) -> Reply | str:
        alive.append(live())
        return answer(request)

    scripted_server.script = counting
    before = live()
    result = verify_cli(scripted_server, run, "--concurrency", "1")
    assert result.exit_code == 0, result.output
    assert len(read_verdicts(run)) == len(CANDIDATES)
    assert len(alive) >= 12 and max(alive) - before <= 3, (before, alive)
