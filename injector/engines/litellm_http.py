"""The size cap of an answer read through litellm (`LLMEngine`'s litellm client).

litellm reads a chat answer whole with its own HTTP client before it hands anything back. For the providers it
reaches through the openai SDK (OpenAI, Azure, every OpenAI-compatible `api_base`) it uses
`litellm.aclient_session` when one is set (its documented way of giving it an httpx client): `answer_cap` sets one
per event loop whose transport holds each request made inside the `with` block to the caller's cap
(`bounded_http.py`: a `Content-Length` past it is refused unread, a body running past it is cut off as it arrives)
and leaves every other request as it was (batch file downloads, litellm's own calls). Providers litellm reaches with
its own handler (Anthropic, Vertex, Bedrock, ...) are still checked once read (`LLMEngine._litellm_proposal`).
"""
from __future__ import annotations

import asyncio
import contextlib
import contextvars
import weakref
from collections.abc import Iterator
from typing import Any

_CAP: contextvars.ContextVar[tuple[float, int] | None] = contextvars.ContextVar("answer_cap", default=None)
"""(deadline seconds, most bytes) of the requests made in the current `answer_cap` block, else None."""
_SESSIONS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()
"""One httpx client per event loop (its connections belong to that loop)."""


@contextlib.contextmanager
def answer_cap(litellm: Any, seconds: float, max_bytes: int) -> Iterator[None]:
    """Requests litellm sends inside the block read at most `max_bytes` of an answer, within `seconds`; a larger
    answer raises `AnswerTooLarge` from the transport (litellm wraps it: `find_cause` finds it)."""
    loop = asyncio.get_running_loop()
    session = _SESSIONS.get(loop)
    if session is None:
        import httpx

        transport = _capping_transport(httpx, _litellm_transport())
        # No timeout of the client's own: litellm's SDK client passes one with each request.
        session = _SESSIONS[loop] = httpx.AsyncClient(transport=transport, follow_redirects=True, timeout=None)
    litellm.aclient_session = session
    token = _CAP.set((seconds, max_bytes))
    try:
        yield
    finally:
        _CAP.reset(token)


def _litellm_transport() -> Any:
    """The transport litellm would give its own client (aiohttp's or httpx's, its SSL settings), when it says."""
    try:
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

        return AsyncHTTPHandler.create_async_transport()
    except (ImportError, AttributeError, TypeError):  # another litellm: httpx's own transport below
        return None


def _capping_transport(httpx: Any, inner: Any) -> Any:
    from injector.util.bounded_http import bound

    class CappingTransport(httpx.AsyncBaseTransport):
        """httpx's transport, each request held to the cap of the `answer_cap` block it was made in, if any."""

        def __init__(self) -> None:
            self.inner = inner or httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            cap = _CAP.get()
            if cap is None:
                return await self.inner.handle_async_request(request)
            return await bound(self.inner, cap[0], cap[1], httpx=httpx).handle_async_request(request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return CappingTransport()
