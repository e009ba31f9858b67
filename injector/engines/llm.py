"""The LLM engine: any model litellm can reach (APIs, vLLM, Ollama), imported lazily and retried explicitly.

OpenAI-compatible endpoints go through the openai SDK directly (`openai_client.py`, `client="auto"`), sending the
same request without litellm's import and per-call cost; `client="litellm"` keeps litellm for them too.
"""
from __future__ import annotations

import asyncio
import functools
import logging
import os
import random
from typing import TYPE_CHECKING, Any, TypedDict

from typing_extensions import Unpack

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, stop_after_delay

from injector.engines.cache import RequestCache, request_key
from injector.util.errors import AuthenticationRefused, UserError
from injector.engines.limits import RateLimiter
from injector.util.redaction import RedactingFilter, public_host, redact
from injector.taxonomy import Category
from injector.model.trajectory import Trajectory
from injector.engines.base import AnswerRefused, Engine, Proposal, ProviderError, TransientProviderError
from injector.util.answer_limits import DEFAULT_MAX_ANSWER_BYTES, AnswerTooLarge, find_cause
from injector.engines.litellm_http import answer_cap
from injector.engines.openai_client import (PLACEHOLDER_KEY, OpenAIClient, choose_client, classify_openai_error, response_text,
                            response_usage)
from injector.engines.model_info import import_litellm, set_offline_environment
from injector.engines.model_info import (SCHEMA_PREFIXES, environment_status, listed_prices, per_token,
                                         response_cost, takes_schema)
from injector.engines.provider_faults import misconfiguration, rate_limit_wait, retry_after

if TYPE_CHECKING:
    from injector.engines.settings import EngineSettings



class LLMOptions(TypedDict, total=False):
    """`LLMEngine`'s keyword settings beside its model, server, limiter, cache and client (defaults below)."""

    temperature: float
    max_tokens: int | None
    use_schema: bool
    timeout: float
    max_answer_bytes: int
    transient_attempts: int
    transient_seconds: float
    backoff_seconds: float
    price_in: float | None
    price_out: float | None


DEFAULT_OPTIONS: LLMOptions = {"temperature": 1.0, "max_tokens": 4096, "use_schema": True, "timeout": 300.0,
                               "max_answer_bytes": DEFAULT_MAX_ANSWER_BYTES,
                               "transient_attempts": 6, "transient_seconds": 600.0, "backoff_seconds": 1.0,
                               "price_in": None, "price_out": None}
log = logging.getLogger(__name__)
USERINFO_REFUSED = "credentials encoded in URL"
"""httpx's words when a URL's userinfo meets an Authorization header: a setting to fix, not a fault to retry."""


def api_base_host(api_base: str | None) -> str | None:
    """Host (and port) of an api base, the part recorded in configuration and provenance: never its userinfo
    (`user:KEY@`), whose secrets are registered for redaction."""
    return public_host(api_base)


class LLMEngine(Engine):
    """Sends a unit's messages through litellm and returns the text, usage and cost."""

    name = "llm"
    takes_feedback = True
    judges = True

    def __init__(self, model: str, *, api_base: str | None = None, limiter: RateLimiter | None = None,
                 cache: RequestCache | None = None, client: str | None = None, **options: Unpack[LLMOptions]):
        sampling: LLMOptions = {**DEFAULT_OPTIONS, **options}
        temperature, max_tokens = sampling["temperature"], sampling["max_tokens"]
        use_schema, timeout = sampling["use_schema"], sampling["timeout"]
        transient_attempts, transient_seconds = sampling["transient_attempts"], sampling["transient_seconds"]
        backoff_seconds, price_in, price_out = sampling["backoff_seconds"], sampling["price_in"], sampling["price_out"]
        self.model = model
        self.api_base = api_base
        """Used as given for requests; only `api_base_host` (no userinfo, no query) is ever recorded."""
        api_base_host(api_base)  # registers the userinfo and query values of the api base as secrets
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.use_schema = use_schema
        self.timeout = timeout
        self.max_answer_bytes = sampling["max_answer_bytes"]
        self.transient_attempts = transient_attempts
        self.transient_seconds = transient_seconds
        self.backoff_seconds = backoff_seconds
        self.limiter = limiter or RateLimiter()
        self.cache = cache
        self.price_in, self.price_out = price_in, price_out
        """Dollars per million prompt / completion tokens, for models litellm has no price for."""
        self.retries = 0
        """Transient faults retried so far (shown in progress; not attempts)."""
        self._api_key: str | None = None
        self.client = choose_client(model, api_base, client)
        """"openai" (the openai SDK, for OpenAI-compatible endpoints) or "litellm"; `client` asks for one ("auto",
        None: the INJECT_CLIENT variable, else auto). Not part of the configuration: both send the same requests."""
        self._openai = OpenAIClient(model, api_base, timeout, self.max_answer_bytes) if self.client == "openai" else None

    def describe(self) -> dict[str, Any]:
        return {
            "engine": self.name,
            "model": self.model,
            "api_base_host": api_base_host(self.api_base),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "schema": self.use_schema,
        }

    def rate_limits(self) -> tuple[float | None, float | None]:
        return self.limiter.rpm, self.limiter.tpm

    def take_worker_share(self, workers: int) -> list[Any]:
        """Its share of --rpm/--tpm, and its own connection to the request cache (`Engine.take_worker_share`)."""
        self.limiter = self.limiter.divided(workers)
        if self.cache is None:
            return []
        inherited, self.cache = self.cache, RequestCache(self.cache.path)
        return [inherited]

    def check_ready(self) -> None:
        """A missing key is a one-line error naming the variable; with --api-base a placeholder key is sent."""
        if self._openai is not None:
            self._api_key = self._openai.api_key()
            return
        status = environment_status(self.model, self.api_base)
        missing = status.get("missing_keys") or []
        if not missing:
            return
        if self.api_base:
            self._api_key = PLACEHOLDER_KEY  # local servers ignore the key, but the openai client insists on one
            return
        raise UserError(
            f"no API key for model {self.model!r}: set {' and '.join(missing)} in the environment "
            "(or point --api-base at a local OpenAI-compatible server)"
        )

    def prices(self) -> tuple[float, float] | None:
        """Dollars per prompt token and per completion token, or None when unknown."""
        if given := per_token(self.price_in, self.price_out):
            return given
        if self._openai is not None:
            return self._openai.prices()
        return listed_prices(self.model)

    def count_tokens(self, messages: list[dict[str, Any]]) -> int:
        return int(import_litellm().token_counter(model=self.model, messages=messages))

    def count_text_tokens(self, text: str) -> int:
        """Tokens of a bare text (no chat framing), with the model's tokenizer as litellm knows it."""
        return int(import_litellm().token_counter(model=self.model, text=text))

    def sends_schema(self) -> bool:
        if not self.use_schema:
            return False
        if self._openai is not None and not self.model.startswith(SCHEMA_PREFIXES):
            return self._openai.sends_schema()
        return takes_schema(self.model)

    def request(self, messages: list[dict[str, Any]], seed: int, schema: dict | None, name: str) -> dict[str, Any]:
        """The litellm arguments that decide the answer (what the cache key covers): no key, no transport."""
        request: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature,
                                   "seed": seed}
        if self.max_tokens:
            request["max_tokens"] = self.max_tokens
        if self.api_base:
            request["api_base"] = self.api_base
        if schema is not None and self.sends_schema():
            request["response_format"] = {
                "type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True},
            }
        return request

    async def propose(
        self,
        messages: list[dict[str, Any]],
        *,
        trajectory: Trajectory,
        category: Category,
        seed: int,
        sample: int,
        response_schema: dict[str, Any] | None,
        output_mode: str = "edits",
        read_cache: bool = True,
    ) -> Proposal:
        """One answer (sent seed+sample): from the cache, else from the provider with transient faults retried.

        The output mode is already in the messages and the schema; the request needs nothing more.
        """
        return await self.ask(messages, seed=seed + sample, response_schema=response_schema,
                              schema_name=f"{category.id}_answer", read_cache=read_cache)

    async def ask(self, messages: list[dict[str, Any]], *, seed: int, response_schema: dict[str, Any] | None = None,
                  schema_name: str = "answer", read_cache: bool = True) -> Proposal:
        """Any prompt's answer (a critique, a rollout): from the cache, else from the provider, transient faults
        retried. `propose` is this with the unit's seed and schema name (so its cache keys never changed)."""
        request = self.request(messages, seed, response_schema, schema_name)
        key = request_key(request) if self.cache else ""  # hashing the request costs ~0.1 ms: only for a cache
        if self.cache and read_cache and (hit := self.cache.get(key)):
            return Proposal(text=hit["text"], usage={}, cost=0.0, details={"cached": True})
        proposal = await self._complete_with_retries(request)
        if self.cache:
            self.cache.put(key, proposal.text, proposal.usage, proposal.cost)
        return proposal

    def _retry_delay(self, error: BaseException | None, failures: int) -> float:
        """Seconds before the next try: the provider's Retry-After, else exponential backoff with jitter."""
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            return min(retry_after, self.transient_seconds)  # never sleep past the retry budget on one header
        return min(60.0, self.backoff_seconds * 2 ** (failures - 1)) + random.uniform(0, self.backoff_seconds)

    async def _complete_with_retries(self, request: dict[str, Any]) -> Proposal:
        # The first try runs bare: building tenacity's machinery for every request costs a tenth of a call's CPU,
        # and most requests never fail.
        try:
            return await self._complete_once(request)
        except TransientProviderError as error:
            if self.transient_attempts <= 1:
                raise
            self.retries += 1
            await asyncio.sleep(self._retry_delay(error, 1))

        def count_retry(state: RetryCallState) -> None:
            self.retries += 1

        retrying = AsyncRetrying(
            retry=retry_if_exception_type(TransientProviderError),
            stop=stop_after_attempt(self.transient_attempts - 1) | stop_after_delay(self.transient_seconds),
            wait=lambda state: self._retry_delay(state.outcome.exception() if state.outcome else None,
                                                 state.attempt_number + 1),
            before_sleep=count_retry,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._complete_once(request)
        raise AssertionError("unreachable")  # tenacity either returns or re-raises

    async def _complete_once(self, request: dict[str, Any]) -> Proposal:
        await self.limiter.before_request(_text_tokens_estimate(request["messages"]))
        if self._openai is not None:
            return await self._complete_once_openai(request, self._openai)
        litellm = import_litellm()
        extra: dict[str, Any] = {"timeout": self.timeout, "num_retries": 0, "drop_params": True,
                                 "max_retries": 0}  # the openai SDK's own retries; ours are explicit
        if self._api_key:
            extra["api_key"] = self._api_key
        try:
            # litellm's timeout restarts with every byte read: the deadline of the whole answer is ours.
            with answer_cap(litellm, self.timeout, self.max_answer_bytes):
                response = await asyncio.wait_for(litellm.acompletion(**request, **extra), self.timeout)
        except asyncio.TimeoutError:
            raise TransientProviderError(f"no complete answer within {self.timeout:g} s (timeout)") from None
        except Exception as exc:  # noqa: BLE001 - every litellm exception is classified (and redacted) here
            if too_large := find_cause(exc, AnswerTooLarge):  # cut off in the transport, wrapped by litellm
                raise AnswerRefused(str(too_large)) from exc
            raise self._refused(exc, classify_provider_error(litellm, exc)) from exc
        return await self._litellm_proposal(litellm, response)

    async def _litellm_proposal(self, litellm: Any, response: Any, details: dict[str, Any] | None = None) -> Proposal:
        """A litellm response as a Proposal (text, usage, cost), its completion tokens told to the rate limiter."""
        text = response.choices[0].message.content or ""
        if len(text) > self.max_answer_bytes // 4 and len(text.encode()) > self.max_answer_bytes:
            # read whole by a provider handler of litellm's own (`litellm_http.py`); it is still not kept.
            raise AnswerRefused(str(AnswerTooLarge(len(text.encode()), self.max_answer_bytes)))
        usage = getattr(response, "usage", None)
        usage_dict = {
            "prompt_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "completion_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
        }
        await self.limiter.after_response(usage_dict["completion_tokens"])
        return Proposal(text=text, usage=usage_dict, cost=self._cost(litellm, response, usage_dict),
                        details=details or {})

    async def _complete_once_openai(self, request: dict[str, Any], client: OpenAIClient) -> Proposal:
        """The same request through the openai SDK (`openai_client.py`): same errors, usage and cost."""
        if self._api_key is None:
            self._api_key = client.api_key()  # check_ready was not called (a library user's engine)
        try:
            payload = await client.complete(request, self._api_key, self.timeout)
        except Exception as exc:  # noqa: BLE001 - every SDK exception is classified (and redacted) here
            raise self._refused(exc, classify_openai_error(exc)) from exc
        usage = response_usage(payload)
        usage_dict = {"prompt_tokens": int(usage.get("prompt_tokens") or 0),
                      "completion_tokens": int(usage.get("completion_tokens") or 0)}
        await self.limiter.after_response(usage_dict["completion_tokens"])
        given = self.price_in is not None and self.price_out is not None
        cost = self._given_price_cost(usage_dict) if given else client.cost(usage)
        return Proposal(text=response_text(payload), usage=usage_dict, cost=cost)

    def _refused(self, exc: Exception, error: Exception) -> Exception:
        """The classified error of a failed request; a 429 also tells the rate limiter. The whole run waits only
        when the window is spent (or 429s come in a burst); a sporadic 429 delays just this request (its retry
        waits the Retry-After). A refusal of the configuration itself stops the run (`misconfiguration`)."""
        error = misconfiguration(exc, error, model=self.model, api_base=self.api_base, max_tokens=self.max_tokens)
        if isinstance(error, TransientProviderError) and error.status == 429:
            wait, window_spent = rate_limit_wait(exc, error.retry_after)
            # Capped at the retry budget: a run never waits longer on one header than it retries.
            self.limiter.rate_limited(min(self.backoff_seconds if wait is None else wait, self.transient_seconds),
                                      window_spent=window_spent)
        return error

    def _given_price_cost(self, usage: dict[str, int]) -> float | None:
        """The cost at --price-in / --price-out, or None when they are not given."""
        if self.price_in is None or self.price_out is None:
            return None
        return (usage["prompt_tokens"] * self.price_in + usage["completion_tokens"] * self.price_out) / 1e6

    def _cost(self, litellm: Any, response: Any, usage: dict[str, int]) -> float | None:
        if self.price_in is not None and self.price_out is not None:
            return self._given_price_cost(usage)
        hidden = getattr(response, "_hidden_params", None) or {}
        if "response_cost" in hidden:  # litellm priced the response already; asking again costs ~1 ms of CPU
            return None if hidden["response_cost"] is None else float(hidden["response_cost"])
        return response_cost(response, self.model)


def from_settings(settings: EngineSettings) -> LLMEngine:
    """The `llm` kind's factory (`registry.py`): one server, or the provider's default one."""
    assert settings.model is not None  # the registry picks this kind only for a model string
    return LLMEngine(settings.model, api_base=settings.api_base, limiter=RateLimiter(settings.rpm, settings.tpm),
                     client=settings.client, **settings.llm_options())


def _text_tokens_estimate(messages: list[dict[str, Any]]) -> int:
    """About four characters a token, over the text parts only (an inlined image is not its base64 length)."""
    chars = 0
    for message in messages:
        content = message.get("content", "")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content}]
        chars += sum(len(part.get("text", "")) for part in parts if part.get("type") == "text")
    return chars // 4


# What litellm says when a 200 answer is no chat completion it can read (e.g. content a list of parts).
LITELLM_UNREADABLE_ANSWER = "Invalid response object"


def classify_provider_error(litellm: Any, exc: Exception) -> Exception:
    """Map a litellm exception to: stop the run, reject the unit, or retry.

    The message is redacted here, the one door provider text passes through on its way to rejects and stderr:
    providers echo keys back ("Incorrect API key provided: sk-...").
    """
    if type(exc).__module__.split(".")[0] == "openai":  # litellm's files and batches API lets the SDK's through
        return classify_openai_error(exc)
    status = getattr(exc, "status_code", None)
    message = redact(str(getattr(exc, "message", None) or exc))  # litellm's message names the class and provider
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)) or status in (401, 403):
        return AuthenticationRefused(f"the provider refused the credentials ({message}); check the API key")
    if USERINFO_REFUSED in message:  # httpx, before sending: userinfo in the api base beside litellm's key header
        return AuthenticationRefused(f"the api base holds credentials (NAME:PASSWORD@ before the host), and "
                                     f"litellm sends its key in an Authorization header too ({message}); put the key "
                                     "in the environment (e.g. OPENAI_API_KEY) instead, or use `client=openai`")
    if isinstance(exc, litellm.ContextWindowExceededError):
        return ProviderError(message)
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        return TransientProviderError(message, retry_after=retry_after(exc), status=429)
    if LITELLM_UNREADABLE_ANSWER in message:  # litellm's own parse failure, reported as a 500: waiting cannot fix it
        return ProviderError(f"the provider answered with no text chat completion litellm can read "
                             f"({message.splitlines()[0]})")
    if isinstance(exc, (litellm.Timeout, litellm.APIConnectionError, litellm.ServiceUnavailableError,
                        litellm.InternalServerError)) or status in (500, 502, 503, 504):
        return TransientProviderError(message, retry_after=None, status=status)
    return ProviderError(message)  # 400, 404, 422 and anything else we cannot fix by waiting
