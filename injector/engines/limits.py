"""Rate limits shared by every request of a run: requests and tokens per minute, and a run-wide pause when the
provider's rate window is spent (a sporadic 429 only delays the request that got it)."""
from __future__ import annotations

import asyncio
import time
from collections import deque
from typing import Callable

from aiolimiter import AsyncLimiter

TOKEN_WINDOW_SECONDS = 10  # tokens are metered in 10 s slices of the per-minute budget, so bursts stay small
# A provider that does not say its window is spent shows it by a burst of 429s: at least this many within this many
# seconds, and at least as many as the answers in those seconds, pause the run. Fewer, or 429s among more answers,
# are sporadic (a burst limit, a busy replica, 10% random 429s): only the request that got one backs off, and the
# run goes on. (Counting answers matters: after a pause every held request leaves at once, and 429s come back
# before answers do, so a 10% rate alone would make a burst of three and pause the run again and again.)
BURST_429S = 3
BURST_SECONDS = 10.0


class RateLimiter:
    """Waits before each request so the run stays under `rpm` and `tpm`, and holds every request during a pause."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.rpm, self.tpm = rpm, tpm
        # One request per 60/rpm seconds, with no initial burst, so a provider's sliding window never overflows.
        self._requests = AsyncLimiter(1, 60 / rpm) if rpm else None
        self._token_capacity = tpm * TOKEN_WINDOW_SECONDS / 60 if tpm else 0
        self._tokens = AsyncLimiter(self._token_capacity, TOKEN_WINDOW_SECONDS) if tpm else None
        self._resume_at = 0.0
        self._clock = clock
        self._recent_429s: deque[float] = deque()
        """When the 429s of the last BURST_SECONDS came (since the last pause)."""
        self._recent_answers: deque[float] = deque()
        """When the answers of the last BURST_SECONDS came."""
        self.pauses = 0
        """Run-wide pauses so far."""

    def divided(self, count: int) -> "RateLimiter":
        """A fresh limiter with 1/`count` of these limits: one for each of `count` processes that share them, so
        together they stay under the totals (`inject run --workers`)."""
        return RateLimiter(self.rpm / count if self.rpm else None, self.tpm / count if self.tpm else None,
                           clock=self._clock)

    async def _wait_for_pause(self) -> None:
        while (delay := self._resume_at - self._clock()) > 0:
            await asyncio.sleep(delay)

    async def before_request(self, prompt_tokens: int) -> None:
        await self._wait_for_pause()
        if self._requests:
            await self._requests.acquire()
        await self._spend_tokens(prompt_tokens)
        await self._wait_for_pause()

    async def after_response(self, completion_tokens: int) -> None:
        """Charge the answer's tokens to the budget (known only afterwards)."""
        now = self._clock()
        self._recent_answers.append(now)
        while now - self._recent_answers[0] >= BURST_SECONDS:  # bounded: only the last BURST_SECONDS are kept
            self._recent_answers.popleft()
        await self._spend_tokens(completion_tokens)

    async def _spend_tokens(self, tokens: int) -> None:
        if self._tokens and tokens > 0:
            await self._tokens.acquire(min(tokens, self._token_capacity))

    def rate_limited(self, seconds: float, *, window_spent: bool) -> bool:
        """A 429 that asks to wait `seconds`: pause the whole run when the provider says its window is spent
        (`window_spent`) or 429s come in a burst, and say so; otherwise only the request that got it waits."""
        now = self._clock()
        self._recent_429s.append(now)
        for times in (self._recent_429s, self._recent_answers):
            while times and now - times[0] >= BURST_SECONDS:
                times.popleft()
        burst = len(self._recent_429s) >= max(BURST_429S, len(self._recent_answers))
        if not (window_spent or burst):
            return False
        self._recent_429s.clear()  # the next pause needs a burst of its own
        self.pause(seconds)
        return True

    def pause(self, seconds: float) -> None:
        """Hold every request of the run for `seconds`: slow the run, not one request."""
        resume_at = self._clock() + seconds
        if resume_at > self._resume_at:
            self._resume_at = resume_at
            self.pauses += 1
