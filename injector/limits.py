"""Rate limits shared by every request of a run: requests and tokens per minute, and a run-wide pause on 429."""
from __future__ import annotations

import asyncio
import time

from aiolimiter import AsyncLimiter

TOKEN_WINDOW_SECONDS = 10  # tokens are metered in 10 s slices of the per-minute budget, so bursts stay small


class RateLimiter:
    """Waits before each request so the run stays under `rpm` and `tpm`, and holds every request during a pause."""

    def __init__(self, rpm: float | None = None, tpm: float | None = None):
        # One request per 60/rpm seconds, with no initial burst, so a provider's sliding window never overflows.
        self._requests = AsyncLimiter(1, 60 / rpm) if rpm else None
        self._token_capacity = tpm * TOKEN_WINDOW_SECONDS / 60 if tpm else 0
        self._tokens = AsyncLimiter(self._token_capacity, TOKEN_WINDOW_SECONDS) if tpm else None
        self._resume_at = 0.0
        self.pauses = 0

    async def _wait_for_pause(self) -> None:
        while (delay := self._resume_at - time.monotonic()) > 0:
            await asyncio.sleep(delay)

    async def before_request(self, prompt_tokens: int) -> None:
        await self._wait_for_pause()
        if self._requests:
            await self._requests.acquire()
        await self._spend_tokens(prompt_tokens)
        await self._wait_for_pause()

    async def after_response(self, completion_tokens: int) -> None:
        """Charge the answer's tokens to the budget (known only afterwards)."""
        await self._spend_tokens(completion_tokens)

    async def _spend_tokens(self, tokens: int) -> None:
        if self._tokens and tokens > 0:
            await self._tokens.acquire(min(tokens, self._token_capacity))

    def pause(self, seconds: float) -> None:
        """Hold every request of the run for `seconds` (a 429's Retry-After): slow the run, not one request."""
        resume_at = time.monotonic() + seconds
        if resume_at > self._resume_at:
            self._resume_at = resume_at
            self.pauses += 1
