"""The fast path for OpenAI-compatible endpoints: the openai SDK's async client, without litellm.

litellm costs ~3 s of import and ~4 ms of CPU per call (bench/RESULTS.md); for `openai/NAME`, `hosted_vllm/NAME`
with an api base, and OpenAI's own chat models, it sends the request body unchanged through this same SDK. This
module sends the same body itself (`AsyncOpenAI.post`, which skips the SDK's per-call typing of the parameters),
with the SDK's retries off (the engine's are explicit), and reads prices from the price table the litellm wheel
ships, without importing litellm (`model_info.price_table`). The engine (`LLMEngine`) keeps everything else: retries, the rate limiter, the
cache and its keys, so an answer cached through one client is a hit through the other.

Where litellm would rewrite the request (reasoning models: `o1`, `o3`, `gpt-5`, ...; any other provider), the engine
keeps litellm.
"""
from __future__ import annotations

import asyncio
import functools
import importlib
import json
import logging
import os
import re
from typing import Any

from injector.model.choices import CLIENTS
from injector.util.errors import AuthenticationRefused, UserError
from injector.util.answer_limits import DEFAULT_MAX_ANSWER_BYTES, AnswerTooLarge, find_cause
from injector.util.redaction import RedactingFilter, redact
from injector.engines.base import AnswerRefused, ProviderError, TransientProviderError
from injector.engines.model_info import (model_entry, price_table, split_model, table_cost, table_prices,
                                         table_takes_schema)
from injector.engines.provider_faults import retry_after

__all__ = ["OpenAIClient", "choose_client", "classify_openai_error", "model_entry", "price_table", "serves",
           "split_model"]

CLIENT_ENV = "INJECT_CLIENT"
"""The environment variable that sets the default client (`--client` overrides it)."""
PLACEHOLDER_KEY = "sk-no-key-needed"
HOSTED_VLLM_PLACEHOLDER = "fake-api-key"  # what litellm sends to a vLLM server when HOSTED_VLLM_API_KEY is unset
REASONING_MODEL = re.compile(r"^(o\d|gpt-5)")
"""Models whose requests litellm rewrites (max_tokens -> max_completion_tokens, temperature dropped): litellm's."""
TRANSIENT_STATUSES = (500, 502, 503, 504)
CONNECTION_LIMITS = {"max_connections": 1000, "max_keepalive_connections": 100}  # the openai SDK's defaults


def serves(model: str, api_base: str | None) -> bool:
    """Whether the openai SDK sends exactly the body litellm would for this model: an OpenAI-compatible route
    (`openai/`, `hosted_vllm/` with an api base, or an OpenAI chat model by its bare name), and not a reasoning
    model (litellm rewrites those requests)."""
    provider, name = split_model(model)
    if REASONING_MODEL.match(name):
        return False
    if provider == "openai":
        return True
    if provider == "hosted_vllm":
        return bool(api_base)
    if provider is None:
        entry = model_entry(model) or {}
        return entry.get("litellm_provider") == "openai" and entry.get("mode") == "chat"
    return False


def choose_client(model: str, api_base: str | None, client: str | None) -> str:
    """"openai" or "litellm" for this model: `client` as asked ("auto", None: the INJECT_CLIENT variable, else
    auto), auto picking the openai SDK wherever it `serves` the model."""
    asked = client or os.environ.get(CLIENT_ENV) or "auto"
    if asked not in CLIENTS:
        raise UserError(f"unknown client {asked!r} (from {'--client' if client else CLIENT_ENV}): choose one of "
                        f"{', '.join(CLIENTS)}")
    if asked == "openai" and not serves(model, api_base):
        raise UserError(f"--client openai serves OpenAI-compatible endpoints (openai/NAME, hosted_vllm/NAME with "
                        f"--api-base, OpenAI's chat models other than reasoning ones), not {model!r}: use "
                        "--client litellm or auto")
    if asked == "auto":
        return "openai" if serves(model, api_base) else "litellm"
    return asked


class OpenAIClient:
    """One model behind an OpenAI-compatible endpoint, reached with the openai SDK's async client."""

    def __init__(self, model: str, api_base: str | None, timeout: float = 300.0,
                 max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES):
        self.provider, self.name = split_model(model)
        self.timeout, self.max_answer_bytes = timeout, max_answer_bytes
        """The deadline of one answer (connect, first byte, whole body) and the largest body read."""
        self.model = model
        self.api_base = api_base
        env_base = os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE")  # as litellm reads them
        self.base_url = api_base or (env_base if self.provider != "hosted_vllm" else None)
        self._clients: dict[Any, Any] = {}
        """One AsyncOpenAI per event loop (its connection pool belongs to the loop it was made in)."""

    def api_key(self) -> str:
        """The key litellm would send; a UserError naming the variable when it is needed and missing."""
        if self.provider == "hosted_vllm":
            return os.environ.get("HOSTED_VLLM_API_KEY") or HOSTED_VLLM_PLACEHOLDER
        key = os.environ.get("OPENAI_API_KEY")
        if key:
            return key
        if self.api_base:
            return PLACEHOLDER_KEY  # local servers ignore the key, but the openai client insists on one
        raise UserError(f"no API key for model {self.model!r}: set OPENAI_API_KEY in the environment "
                        "(or point --api-base at a local OpenAI-compatible server)")

    def sends_schema(self) -> bool:
        """OpenAI's models take a JSON-schema response_format when the price table says so; any other endpoint
        reached this way is sent one (as with litellm, forwarding works for local servers)."""
        return self.provider is not None or table_takes_schema(self.model)

    def prices(self) -> tuple[float, float] | None:
        """Dollars per prompt and per completion token from litellm's table, or None for an unlisted model."""
        return table_prices(self.model)

    def cost(self, usage: dict[str, Any]) -> float | None:
        """The answer's price as litellm computes it for these models (`model_info.table_cost`)."""
        return table_cost(self.model, usage)

    def _client(self, api_key: str) -> Any:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            from injector.util.bounded_http import bounded_transport  # httpx: imported with the SDK, on first use

            openai = import_openai()
            transport = bounded_transport(self.timeout, self.max_answer_bytes, httpx=_sdk_httpx(openai),
                                          limits=CONNECTION_LIMITS)
            http_client = openai.DefaultAsyncHttpxClient(transport=transport)
            self._clients = {loop: openai.AsyncOpenAI(api_key=api_key, base_url=self.base_url, max_retries=0,
                                                      http_client=http_client)}
            client = self._clients[loop]
        return client

    async def complete(self, request: dict[str, Any], api_key: str, timeout: float) -> dict[str, Any]:
        """The response body (JSON) to `request` (the engine's litellm-style request: `api_base` is the client's,
        the model is sent without its provider prefix)."""
        import httpx

        body = {key: value for key, value in request.items() if key != "api_base"}
        body["model"] = self.name
        response = await self._client(api_key).post("/chat/completions", body=body, cast_to=httpx.Response,
                                                     options={"timeout": timeout})
        try:
            payload = json.loads(response.content)
        except ValueError as exc:  # a 200 that is not JSON (a broken proxy): litellm retries it as a 500
            raise MalformedResponse(f"the provider's answer is not JSON ({exc})") from None
        if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list) or not payload["choices"]:
            raise MalformedResponse("the provider's answer has no choices")
        return payload


class MalformedResponse(TransientProviderError):
    """An HTTP 200 whose body is not a chat completion (a broken proxy): retried."""


@functools.lru_cache(maxsize=1)
def import_openai() -> Any:
    """Import the openai SDK on first use (~0.7 s), its log lines redacted like litellm's."""
    import openai

    for name in ("openai", "httpx"):
        logging.getLogger(name).addFilter(RedactingFilter())
    return openai


def _sdk_httpx(openai: Any) -> Any:
    """The httpx module the SDK's clients are made of (recent SDKs ship a fork, `httpx2`)."""
    return importlib.import_module(openai.DefaultAsyncHttpxClient.__mro__[1].__module__.split(".")[0])


def response_text(payload: dict[str, Any]) -> str:
    """The answer's text; a `ProviderError` (the unit's reject, as a batch line's) when its content is no text (a
    list of parts, an object): it was stored in the cache as is and failed there, named as a full disk."""
    choice = payload["choices"][0]
    message = (choice.get("message") if isinstance(choice, dict) else None) or {}
    content = message.get("content") if isinstance(message, dict) else None
    if content is not None and not isinstance(content, str):
        raise ProviderError("the provider's answer has no text choices[0].message.content (a "
                            f"{type(content).__name__}); ask for text answers")
    return content or ""


def response_usage(payload: dict[str, Any]) -> dict[str, Any]:
    return payload.get("usage") or {}


def classify_openai_error(exc: Exception) -> Exception:
    """Map an openai SDK exception to stop the run, reject the unit, or retry: the same reason codes as
    `llm.classify_provider_error` gives litellm's exceptions for the same HTTP answer, the message redacted."""
    openai = import_openai()
    if too_large := find_cause(exc, AnswerTooLarge):  # raised in the transport, wrapped by the SDK
        return AnswerRefused(str(too_large))
    status = getattr(exc, "status_code", None)
    message = redact(f"{type(exc).__name__}: {_provider_message(exc)}")
    if isinstance(exc, (openai.AuthenticationError, openai.PermissionDeniedError)) or status in (401, 403):
        return AuthenticationRefused(f"the provider refused the credentials ({message}); check the API key")
    if isinstance(exc, openai.RateLimitError) or status == 429:
        return TransientProviderError(message, retry_after=retry_after(exc), status=429)
    if (isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, MalformedResponse))
            or status in TRANSIENT_STATUSES):
        return TransientProviderError(message, retry_after=None, status=status)
    return ProviderError(message)  # 400 (context window exceeded too), 404, 422 and anything else


def _provider_message(exc: Exception) -> str:
    """The provider's own error text (`{"error": {"message": ...}}`), else the SDK's message."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
    return str(getattr(exc, "message", None) or exc)
