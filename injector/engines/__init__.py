"""Engines: what answers a unit's messages (`base.Engine`), and `from_model`, which builds one from a model name."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from injector.engines.cache import RequestCache
from injector.model.choices import OFFLINE_MODEL  # defined there for --help
from injector.util.errors import UserError
from injector.engines.limits import RateLimiter
from injector.engines.base import Engine
from injector.engines.llm import LLMEngine
from injector.engines.batch import BatchEngine, BatchSettings
from injector.engines.deployments import from_api_bases, load_deployments
from injector.engines.offline import OfflineEngine
from injector.engines.router import RouterEngine


def from_model(
    model: str | None,
    *,
    api_base: str | list[str] | tuple[str, ...] | None = None,
    deployments: str | Path | None = None,
    batch: BatchSettings | None = None,
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

    Several `api_base`s, or a `deployments` file, give a `RouterEngine` spreading the requests over those servers
    (through litellm's Router); `batch` gives a `BatchEngine` sending them through the provider's batch API
    (litellm's). Otherwise `client` picks how an LLM is reached ("auto", "litellm", "openai"; None: the
    INJECT_CLIENT variable, else auto: the openai SDK for OpenAI-compatible endpoints, litellm for the rest). The LLM
    options are ignored by the offline engine, which has no settings.
    """
    api_bases = [api_base] if isinstance(api_base, str) else list(api_base or [])
    if client == "openai" and (batch is not None or deployments is not None or len(api_bases) > 1):
        raise UserError("--client openai sends to one server: a Router (--deployments, several --api-base) and "
                        "--batch go through litellm; drop --client or pass --client litellm")
    if batch is not None:
        if deployments is not None or len(api_bases) > 1 or model in (None, OFFLINE_MODEL):
            raise UserError("--batch sends through one provider's batch API: give --model with an LLM and at most "
                            "one --api-base (no --deployments)")
        assert model is not None
        return BatchEngine(model, api_base=api_bases[0] if api_bases else None, temperature=temperature,
                           max_tokens=max_tokens, use_schema=use_schema, timeout=timeout,
                           limiter=RateLimiter(rpm, tpm), cache=RequestCache(cache_path) if use_cache else None,
                           price_in=price_in, price_out=price_out, run_dir=batch.run_dir,
                           max_requests=batch.max_requests, max_bytes=batch.max_bytes,
                           poll_seconds=batch.poll_seconds, wait=batch.wait)
    if deployments is not None or len(api_bases) > 1:
        return _router_engine(model, api_bases, deployments, temperature=temperature, max_tokens=max_tokens,
                              use_schema=use_schema, timeout=timeout, rpm=rpm, tpm=tpm,
                              cache=RequestCache(cache_path) if use_cache else None, price_in=price_in,
                              price_out=price_out)
    if model is None or model == OFFLINE_MODEL:
        return OfflineEngine()
    return LLMEngine(model, api_base=api_bases[0] if api_bases else None, temperature=temperature,
                     max_tokens=max_tokens, use_schema=use_schema,
                     timeout=timeout, limiter=RateLimiter(rpm, tpm),
                     cache=RequestCache(cache_path) if use_cache else None, price_in=price_in, price_out=price_out,
                     client=client)


def _router_engine(model: str | None, api_bases: list[str], deployments: str | Path | None, *, rpm: float | None,
                   tpm: float | None, **options: Any) -> RouterEngine:
    if deployments is not None and api_bases:
        raise UserError("give either --deployments or --api-base, not both (list every server in the file)")
    if model == OFFLINE_MODEL:
        raise UserError("the offline engine sends no requests: several servers need --model with an LLM")
    if deployments is not None:
        servers = load_deployments(deployments)
    elif model is None:
        raise UserError("several --api-base need --model, e.g. --model openai/qwen")
    else:
        servers = from_api_bases(model, api_bases)
    return RouterEngine(servers, model=model, limiter=RouterEngine.limiter_for(servers, rpm, tpm), **options)


__all__ = ["OFFLINE_MODEL", "BatchEngine", "BatchSettings", "Engine", "LLMEngine", "OfflineEngine", "RouterEngine",
           "from_model"]
