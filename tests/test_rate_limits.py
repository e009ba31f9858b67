"""429s over real HTTP: a sporadic one delays only its request; the run pauses when the provider says its window
is spent (`x-ratelimit-remaining-*: 0`) or 429s come in a burst. Counted, never timed."""
from __future__ import annotations

import asyncio
import json

import pytest
from scripted_server import Reply

from injector import LLMEngine, Taxonomy, Trajectory, inject_one
from injector.engines.limits import BURST_429S, BURST_SECONDS, RateLimiter
from injector.records.models import Candidate

STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
ANSWER = json.dumps({"question": None, "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.",
                                                   "error": True}], "reason": "2 + 3 is 5, not 6."})


def trajectory(k: int) -> Trajectory:
    return Trajectory(id=f"t{k}", question=f"What is $2 + 3$? ({k})", steps=STEPS, answer="5")


class RecordingLimiter(RateLimiter):
    """A RateLimiter that notes each 429 it is told of: (seconds asked, window said spent, run paused)."""

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.told: list[tuple[float, bool, bool]] = []

    def rate_limited(self, seconds: float, *, window_spent: bool) -> bool:
        paused = super().rate_limited(seconds, window_spent=window_spent)
        self.told.append((seconds, window_spent, paused))
        return paused


@pytest.fixture(scope="module")
def taxonomy() -> Taxonomy:
    return Taxonomy.load()


def run_units(taxonomy, server, units: int, *, concurrent: bool) -> tuple[LLMEngine, RecordingLimiter, list]:
    limiter = RecordingLimiter()
    engine = LLMEngine("openai/scripted", api_base=server.api_base, backoff_seconds=0, limiter=limiter)
    engine.check_ready()
    category = taxonomy.category("counterfactual")

    async def all_units() -> list:
        if concurrent:
            return list(await asyncio.gather(*(inject_one(taxonomy, category, trajectory(k), engine)
                                               for k in range(units))))
        return [await inject_one(taxonomy, category, trajectory(k), engine) for k in range(units)]

    return engine, limiter, asyncio.run(all_units())


def test_a_sporadic_429_delays_only_its_request(taxonomy, scripted_server):
    scripted_server.reply_in_order([Reply(status=429, headers={"Retry-After": "0"})] + [ANSWER] * 4)
    engine, limiter, records = run_units(taxonomy, scripted_server, 4, concurrent=True)
    assert all(isinstance(record, Candidate) for record in records), records
    assert limiter.told == [(0.0, False, False)] and limiter.pauses == 0  # the other units never waited
    assert engine.retries == 1 and len(scripted_server.requests) == 5


@pytest.mark.parametrize("window", ["requests", "tokens"])
def test_a_429_saying_the_window_is_spent_pauses_the_run(taxonomy, scripted_server, window):
    spent = Reply(status=429, headers={f"x-ratelimit-remaining-{window}": "0", f"x-ratelimit-reset-{window}": "20ms"})
    scripted_server.reply_in_order([spent, ANSWER])
    engine, limiter, [record] = run_units(taxonomy, scripted_server, 1, concurrent=False)
    assert isinstance(record, Candidate)
    assert limiter.told == [(0.02, True, True)] and limiter.pauses == 1  # paused for the window's reset time


def test_retry_after_wins_over_the_reset_header(taxonomy, scripted_server):
    spent = Reply(status=429, headers={"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s",
                                       "Retry-After": "0"})
    scripted_server.reply_in_order([spent, ANSWER])
    _, limiter, _ = run_units(taxonomy, scripted_server, 1, concurrent=False)
    assert limiter.told == [(0.0, True, True)]


def test_a_remaining_budget_above_zero_is_sporadic(taxonomy, scripted_server):
    scripted_server.reply_in_order([Reply(status=429, headers={"x-ratelimit-remaining-requests": "12",
                                                               "Retry-After": "0"}), ANSWER])
    _, limiter, _ = run_units(taxonomy, scripted_server, 1, concurrent=False)
    assert limiter.told == [(0.0, False, False)] and limiter.pauses == 0


def test_three_429s_in_a_row_pause_the_run_once(taxonomy, scripted_server):
    too_many = Reply(status=429, headers={"Retry-After": "0"})
    scripted_server.reply_in_order([too_many] * 4 + [ANSWER])
    engine, limiter, [record] = run_units(taxonomy, scripted_server, 1, concurrent=False)
    assert isinstance(record, Candidate) and engine.retries == 4
    # The third pauses the run; the fourth starts a new count.
    assert [paused for _, _, paused in limiter.told] == [False, False, True, False] and limiter.pauses == 1


def test_429s_among_more_answers_never_pause(taxonomy, scripted_server):
    too_many = Reply(status=429, headers={"Retry-After": "0"})
    scripted_server.reply_in_order([ANSWER, ANSWER, too_many, ANSWER] * 3)  # 3 429s and 9 answers in a few seconds
    _, limiter, records = run_units(taxonomy, scripted_server, 9, concurrent=False)
    assert all(isinstance(record, Candidate) for record in records)
    assert [paused for _, _, paused in limiter.told] == [False] * 3 and limiter.pauses == 0


def test_a_burst_counts_only_429s_within_its_window():
    now = [0.0]
    limiter = RateLimiter(clock=lambda: now[0])
    decisions = []
    # At 12 s the first 429 has left the 10 s window (two in it); at 14 s three are in it.
    for at in (0.0, 5.0, 12.0, 14.0):
        now[0] = at
        decisions.append(limiter.rate_limited(1.0, window_spent=False))
    assert (BURST_429S, BURST_SECONDS) == (3, 10.0) and decisions == [False, False, False, True] and limiter.pauses == 1


def test_a_burst_needs_as_many_429s_as_answers():
    now = [0.0]
    limiter = RateLimiter(clock=lambda: now[0])

    async def answers(count: int) -> None:
        for _ in range(count):
            await limiter.after_response(10)

    asyncio.run(answers(4))
    decisions = [limiter.rate_limited(1.0, window_spent=False) for _ in range(5)]
    assert decisions == [False, False, False, True, False]  # the 4th 429 matches the 4 answers; then a new count
    now[0] = BURST_SECONDS  # the answers (and the 5th 429) have left the window: three 429s make a burst again
    assert [limiter.rate_limited(1.0, window_spent=False) for _ in range(3)] == [False, False, True]


def test_a_pause_holds_every_request_of_the_run(monkeypatch):
    now, slept = [0.0], []
    real_sleep = asyncio.sleep

    async def sleep(delay: float) -> None:  # a clock that jumps instead of waiting
        slept.append(delay)
        until = now[0] + delay
        await real_sleep(0)  # let the other request reach the pause too
        now[0] = max(now[0], until)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    limiter = RateLimiter(clock=lambda: now[0])
    limiter.pause(30.0)

    async def two_requests() -> None:
        await asyncio.gather(limiter.before_request(10), limiter.before_request(10))

    asyncio.run(two_requests())
    assert slept == [30.0, 30.0] and now[0] == 30.0 and limiter.pauses == 1  # both waited out the same pause
