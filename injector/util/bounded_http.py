"""A deadline and a size cap for every answer an HTTP client reads (the openai SDK's client, the PRM server's).

httpx's timeouts are per operation: a read timeout restarts with every byte, so a server that sends its body one
byte a second keeps a request open for ever. `bounded_transport` wraps httpx's transport with one deadline for the
whole exchange (connect, first byte, whole body) and a cap on the bytes of the body (a `Content-Length` past the
cap is refused before the body is read; a body that runs past it is cut off as it arrives). A deadline miss is an
`httpx.ReadTimeout` (`AnswerDeadline`), which the clients treat as a timeout; an oversize body is `AnswerTooLarge`.
"""
from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

from injector.util.answer_limits import DEFAULT_MAX_ANSWER_BYTES, AnswerTooLarge


def bounded_transport(seconds: float, max_bytes: int = DEFAULT_MAX_ANSWER_BYTES, *, httpx: ModuleType | None = None,
                      **transport_options: Any) -> Any:
    """httpx's async transport held to a deadline of `seconds` for each exchange and `max_bytes` for each body.

    `httpx` is the module of the client it goes into (the openai SDK ships its own fork, `httpx2`, whose clients
    take only its transports); plain httpx when not given. `transport_options` go to its `AsyncHTTPTransport`
    (`limits` as a dict)."""
    if httpx is None:
        import httpx as plain_httpx

        httpx = plain_httpx
    kinds = _transport_kinds(httpx)
    if "limits" in transport_options:
        transport_options["limits"] = httpx.Limits(**transport_options["limits"])
    return kinds.transport(seconds, max_bytes, httpx.AsyncHTTPTransport(**transport_options))


def bound(inner: Any, seconds: float, max_bytes: int, *, httpx: ModuleType) -> Any:
    """`inner` (a transport of `httpx`, kept open by the caller) held to `seconds` and `max_bytes` as
    `bounded_transport`'s is, for one exchange or more."""
    return _transport_kinds(httpx).transport(seconds, max_bytes, inner)


class _Kinds:
    def __init__(self, transport: type, deadline: type[Exception]):
        self.transport, self.deadline = transport, deadline


@functools.cache
def _transport_kinds(httpx: ModuleType) -> _Kinds:
    """The transport, body stream and deadline exception classes for one httpx module (built once per module)."""

    class AnswerDeadline(httpx.ReadTimeout):  # type: ignore[name-defined]
        """No complete answer within the deadline (connect, first byte and the whole body together)."""

    class BoundedTransport(httpx.AsyncBaseTransport):  # type: ignore[name-defined]
        def __init__(self, seconds: float, max_bytes: int, inner: Any):
            self.seconds, self.max_bytes, self.inner = seconds, max_bytes, inner

        async def handle_async_request(self, request: Any) -> Any:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.seconds
            try:
                response = await asyncio.wait_for(self.inner.handle_async_request(request), self.seconds)
            except asyncio.TimeoutError:
                raise AnswerDeadline(f"no answer within {self.seconds:g} s", request=request) from None
            declared = response.headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.max_bytes:
                await response.aclose()
                raise AnswerTooLarge(int(declared), self.max_bytes)
            stream = BoundedStream(response.stream, deadline, self.seconds, self.max_bytes, request)
            return httpx.Response(status_code=response.status_code, headers=response.headers, stream=stream,
                                  extensions=response.extensions, request=request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    class BoundedStream(httpx.AsyncByteStream):  # type: ignore[name-defined]
        """A response body read against the exchange's deadline and the size cap."""

        def __init__(self, inner: Any, deadline: float, seconds: float, max_bytes: int, request: Any):
            self.inner, self.deadline, self.seconds, self.max_bytes = inner, deadline, seconds, max_bytes
            self.request = request

        async def __aiter__(self) -> AsyncIterator[bytes]:
            chunks = self.inner.__aiter__()
            loop, size = asyncio.get_running_loop(), 0
            while True:
                remaining = self.deadline - loop.time()
                try:
                    if remaining <= 0:
                        raise asyncio.TimeoutError
                    chunk = await asyncio.wait_for(chunks.__anext__(), remaining)
                except StopAsyncIteration:
                    return
                except asyncio.TimeoutError:
                    raise AnswerDeadline(f"the answer was not complete within {self.seconds:g} s",
                                         request=self.request) from None
                size += len(chunk)
                if size > self.max_bytes:
                    raise AnswerTooLarge(None, self.max_bytes)
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    return _Kinds(BoundedTransport, AnswerDeadline)
