"""Two `inject verify` passes at once on one run directory: the second is refused at once (exit 2, naming the lock)
and sends nothing, instead of judging every candidate a second time."""
from __future__ import annotations

import threading

from test_verify import judge, judge_table, make_run, verify_cli

from injector.engines.llm import LLMEngine
from injector.triage.verdicts import read_verdicts
from injector.triage.verify import VERIFY_LOCK, verify


def test_a_second_verify_of_one_run_directory_is_refused_while_the_first_works(scripted_server, tmp_path):
    run = make_run(tmp_path / "run")
    answer = judge(judge_table())
    first_is_asking, second_is_done = threading.Event(), threading.Event()

    def held_judge(request):  # the first pass's requests wait until the second pass has been refused
        first_is_asking.set()
        assert second_is_done.wait(60), "the second verify never returned"
        return answer(request)

    scripted_server.script = held_judge
    outcome: dict = {}

    def first_pass() -> None:
        try:
            outcome["summary"] = verify(run, LLMEngine("openai/judge", api_base=scripted_server.api_base))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = exc

    worker = threading.Thread(target=first_pass)
    worker.start()
    try:
        assert first_is_asking.wait(60), "the first verify sent no request"
        asked = len(scripted_server.requests)
        second = verify_cli(scripted_server, run)
    finally:
        second_is_done.set()
        worker.join(120)
    assert second.exit_code == 2, second.output
    assert second.output.strip() == (f"error: {run} is being worked on by another `inject verify`, which holds "
                                     f"{run / VERIFY_LOCK}; wait for it to finish, then run the same command again")
    assert "error" not in outcome, outcome
    # Only the first pass asked the judge: every request beyond those in flight when the second started is its own.
    assert outcome["summary"].verified == 12 and len(read_verdicts(run)) == 12
    assert outcome["summary"].usage.requests + outcome["summary"].usage.cached == len(scripted_server.requests)
    assert asked >= 1
    # Once the first pass is over, the lock is free: the same command runs (and finds everything verified).
    again = verify_cli(scripted_server, run)
    assert again.exit_code == 0 and "0 verified now, 12 already verified" in again.output
