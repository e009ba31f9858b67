"""Rate limits shared by every request of a run: requests and tokens per minute, and a run-wide pause when the
provider's rate window is spent (a sporadic 429 only delays the request that got it)."""
from __future__ import annotations

import asyncio
import time
from typing import Callable

from aiolimiter import AsyncLimiter

TOKEN_WINDOW_SECONDS = 10  # tokens are metered in 10 s slices of the per-minute budget, so bursts stay small
# A provider that does not say its window is spent shows it by 429s in a row: this many, within this many seconds,
# with no answer between them, pause the run. Fewer, or 429s between answers, are sporadic (a burst limit, a busy
# replica): only the request that got one backs off, the rest of the run goes on.
BURST_429S = 3
BURST_SECONDS = 10.0


class RateLimiter:
    """Waits before each request so the run stays under `rpm` and `tpm`, and holds every request during a pause."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        # One request per 60/rpm seconds, with no initial burst, so a provider's sliding window never overflows.
        self._requests = AsyncLimiter(1, 60 / rpm) if rpm else None
        self._token_capacity = tpm * TOKEN_WINDOW_SECONDS / 60 if tpm else 0
        self._tokens = AsyncLimiter(self._token_capacity, TOKEN_WINDOW_SECONDS) if tpm else None
        self._resume_at = 0.0
        self._clock = clock
        self._recent_429s: list[float] = []
        """When the 429s since the last answer (or the last pause) came."""
        self.pauses = 0
        """Run-wide pauses so far."""

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
        self._recent_429s.clear()  # an answer came through, so the window was not spent
        await self._spend_tokens(completion_tokens)

    async def _spend_tokens(self, tokens: int) -> None:
        if self._tokens and tokens > 0:
            await self._tokens.acquire(min(tokens, self._token_capacity))

    def rate_limited(self, seconds: float, *, window_spent: bool) -> bool:
        """A 429 that asks to wait `seconds`: pause the whole run when the provider says its window is spent
        (`window_spent`) or 429s come in a burst, and say so; otherwise only the request that got it waits."""
        now = self._clock()
        self._recent_429s = [at for at in self._recent_429s if now - at < BURST_SECONDS] + [now]
        if not window_spent and len(self._recent_429s) < BURST_429S:
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
