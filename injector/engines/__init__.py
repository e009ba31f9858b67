"""Engines: what answers a unit's messages (`base.Engine`), and `from_model`, which builds one from a model name."""
from __future__ import annotations

from pathlib import Path

from ..cache import RequestCache
from ..choices import OFFLINE_MODEL  # defined there for --help
from ..limits import RateLimiter
from .base import Engine
from .llm import LLMEngine
from .offline import OfflineEngine


def from_model(
    model: str | None,
    *,
    api_base: str | None = None,
    temperature: float = 1.0,
    max_tokens: int | None = 4096,
    use_schema: bool = True,
    timeout: float = 300.0,
    rpm: float | None = None,
    tpm: float | None = None,
    use_cache: bool = True,
    cache_path: str | Path | None = None,
    price_in: float | None = None,
    price_out: float | None = None,
    client: str | None = None,
) -> Engine:
    """The engine for `model`: the offline one for None or "offline", else an `LLMEngine` with its rate limiter
    (`rpm`, `tpm`) and request cache (`cache_path`, default the user cache directory; none when not `use_cache`).

    `client` picks how an LLM is reached ("auto", "litellm", "openai"; None: the INJECT_CLIENT variable, else
    auto: the openai SDK for OpenAI-compatible endpoints, litellm for the rest). The LLM options are ignored by the
    offline engine, which has no settings.
    """
    if model is None or model == OFFLINE_MODEL:
        return OfflineEngine()
    return LLMEngine(model, api_base=api_base, temperature=temperature, max_tokens=max_tokens, use_schema=use_schema,
                     timeout=timeout, limiter=RateLimiter(rpm, tpm),
                     cache=RequestCache(cache_path) if use_cache else None, price_in=price_in, price_out=price_out,
                     client=client)


__all__ = ["OFFLINE_MODEL", "Engine", "LLMEngine", "OfflineEngine", "from_model"]
