"""What litellm's model list says about a model: its prices, whether it takes a JSON-schema response_format, which
provider serves it, what an answer cost; and litellm's import.

The one owner of these look-ups (the LLM, Router and batch engines and the openai SDK client ask here): through
litellm (`listed_prices`, `takes_schema`, `provider_of`, `environment_status`, `response_cost`), or from the price
table its wheel ships, read without importing it (`price_table`, `model_entry`). litellm raises a bare `Exception`
(or `ModelNotMappedError`) for a model it does not list; that is "unknown" (None / False). Anything else it raises
there is a litellm fault: it is logged, one line, and also read as unknown, so a run goes on with the cost unknown
rather than stopping. A model string litellm cannot route is an `UnroutableModel` (exit 2).
"""
from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
from pathlib import Path
from typing import Any

from injector.util.errors import UserError
from injector.util.redaction import RedactingFilter, redact

log = logging.getLogger(__name__)

SCHEMA_PREFIXES = ("openai/", "hosted_vllm/", "ollama_chat/")
"""Providers that take a JSON-schema response_format although litellm's price list does not say so (its support
check only knows listed models; forwarding works for local servers)."""

PRICE_TABLE = "model_prices_and_context_window_backup.json"
_NOT_LISTED = ("isn't mapped", "not mapped", "not found", "provider list", "LLM Provider NOT provided")


@functools.lru_cache(maxsize=1)
def set_offline_environment() -> None:
    """litellm fetches a price map and HF tokenizers at import unless told not to; nothing here reaches the net."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


def import_litellm() -> Any:
    """Import litellm on first use (~2 s, ~190 MB), with its banners and hidden retries off."""
    set_offline_environment()
    import litellm

    litellm.suppress_debug_info = True
    litellm.num_retries = 0
    litellm.disable_hf_tokenizer_download = True
    for name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy"):  # litellm's loggers write through their own handlers
        logging.getLogger(name).addFilter(RedactingFilter())
    return litellm


def _litellm() -> Any:
    return import_litellm()


def _unlisted(exc: Exception) -> bool:
    """litellm's way of saying a model is not in its list (its message; it raises a bare Exception)."""
    return type(exc) is Exception or any(phrase in str(exc) for phrase in _NOT_LISTED)


def _swallowed(what: str, model: str, exc: Exception) -> None:
    if not _unlisted(exc):
        log.warning("litellm failed to tell %s of %s (%s: %s); taken as unknown", what, model, type(exc).__name__,
                    exc)


def listed_prices(model: str, *, batches: bool = False) -> tuple[float, float] | None:
    """Dollars per prompt and per completion token as litellm lists them (its batch prices with `batches`), or
    None when it lists none."""
    try:
        info = _litellm().get_model_info(model)
    except Exception as exc:  # noqa: BLE001 - see the module's docstring: unknown, and logged unless unlisted
        _swallowed("the price", model, exc)
        return None
    suffix = "_batches" if batches else ""
    price_in, price_out = info.get(f"input_cost_per_token{suffix}"), info.get(f"output_cost_per_token{suffix}")
    return (price_in, price_out) if price_in is not None and price_out is not None else None


def takes_schema(model: str) -> bool:
    """Whether `model` takes a JSON-schema response_format (a known prefix, else litellm's list)."""
    if model.startswith(SCHEMA_PREFIXES):
        return True
    try:
        return bool(_litellm().supports_response_schema(model=model))
    except Exception as exc:  # noqa: BLE001 - see the module's docstring: unknown, and logged unless unlisted
        _swallowed("the response_format support", model, exc)
        return False


class UnroutableModel(UserError):
    """A model string litellm cannot route to a provider ("LLM Provider NOT provided")."""


def _unroutable(litellm: Any) -> tuple[type[Exception], ...]:
    """What litellm raises for a model string it cannot route: its `BadRequestError`; a provider's own parser of the
    string may raise ValueError or KeyError."""
    return (litellm.BadRequestError, ValueError, KeyError)


def environment_status(model: str, api_base: str | None) -> dict[str, Any]:
    """litellm's `validate_environment` (which keys the model needs, which are missing), or UnroutableModel."""
    litellm = _litellm()
    try:
        return dict(litellm.validate_environment(model=model, api_base=api_base))
    except _unroutable(litellm) as exc:
        raise UnroutableModel(f"model {model!r} is not usable: {redact(str(exc))}") from None


def provider_of(model: str, api_base: str | None) -> tuple[str, str]:
    """(the model as its provider names it, litellm's provider name), or UnroutableModel."""
    litellm = _litellm()
    try:
        name, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base)
    except _unroutable(litellm) as exc:
        raise UnroutableModel(f"model {model!r} is not usable: {redact(str(exc))}") from None
    return str(name), str(provider)


def response_cost(response: Any, model: str) -> float | None:
    """What litellm prices an answer at, or None (an unlisted model's cost is unknown, not 0)."""
    try:
        return float(_litellm().completion_cost(completion_response=response))
    except Exception as exc:  # noqa: BLE001 - as listed_prices: unlisted is unknown, anything else logged as well
        _swallowed("the cost of an answer", model, exc)
        return None


@functools.lru_cache(maxsize=1)
def price_table() -> dict[str, Any]:
    """litellm's bundled price table (model -> prices and capabilities), read as JSON from the installed wheel
    without importing litellm (~3 s); {} when litellm is not installed or the file is unreadable."""
    spec = importlib.util.find_spec("litellm")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        try:
            with open(Path(location) / PRICE_TABLE, encoding="utf-8") as handle:
                table = json.load(handle)
        except (OSError, ValueError):
            continue
        return table if isinstance(table, dict) else {}
    return {}


def split_model(model: str) -> tuple[str | None, str]:
    """(provider prefix or None, the model name sent to the server): "openai/qwen" -> ("openai", "qwen")."""
    provider, sep, name = model.partition("/")
    return (provider, name) if sep else (None, model)


def model_entry(model: str) -> dict[str, Any] | None:
    """The price table's entry for a model string, as litellm finds it: the full string, else the name without
    its provider prefix when the entry belongs to that provider."""
    table = price_table()
    entry = table.get(model)
    if isinstance(entry, dict):
        return entry
    provider, name = split_model(model)
    entry = table.get(name) if provider else None
    if isinstance(entry, dict) and entry.get("litellm_provider") == provider:
        return entry
    return None


def table_takes_schema(model: str) -> bool:
    """Whether the price table says `model` takes a JSON-schema response_format."""
    return bool((model_entry(model) or {}).get("supports_response_schema"))


def table_prices(model: str) -> tuple[float, float] | None:
    """Dollars per prompt and per completion token from the price table, or None for an unlisted model."""
    entry = model_entry(model) or {}
    price_in, price_out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
    return (price_in, price_out) if price_in is not None and price_out is not None else None


def table_cost(model: str, usage: dict[str, Any]) -> float | None:
    """An answer's price from the price table as litellm computes it for OpenAI-compatible models: prompt tokens
    (cached ones at the cached price, when the table has one) and completion tokens; None for an unlisted model."""
    prices = table_prices(model)
    if prices is None:
        return None
    entry = model_entry(model) or {}
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    cached_price = entry.get("cache_read_input_token_cost")
    cached = int(((usage.get("prompt_tokens_details") or {}).get("cached_tokens")) or 0)
    if cached_price is None or not cached:
        return float(prompt * prices[0] + completion * prices[1])
    return float((prompt - cached) * prices[0] + cached * cached_price + completion * prices[1])


def per_token(price_in: float | None, price_out: float | None) -> tuple[float, float] | None:
    """Given prices (dollars per million tokens) per token, when both are given."""
    return (price_in / 1e6, price_out / 1e6) if price_in is not None and price_out is not None else None


def similar_models(model: str, limit: int = 3) -> list[str]:
    """Chat models in litellm's (offline) model list whose names are closest to `model`, closest first: the likely
    fix of a typo ("gtp-4o" -> "gpt-4o"). A provider prefix is kept on the suggestions."""
    import difflib

    prefix, _, name = model.rpartition("/")
    try:
        listed = [key for key, info in _litellm().model_cost.items()
                  if isinstance(info, dict) and info.get("mode") == "chat"]
    except Exception as exc:  # noqa: BLE001 - logged: a suggestion is only a courtesy
        log.debug("no model list for suggestions (%s)", exc)
        return []
    matches = difflib.get_close_matches(name, listed, n=limit, cutoff=0.75)
    return [f"{prefix}/{match}" if prefix and "/" not in match else match for match in matches]
