"""What litellm's model list says about a model: its prices and whether it takes a JSON-schema response_format.

The one owner of these look-ups (the LLM, Router and batch engines ask here). litellm raises a bare `Exception` for
a model it does not list; that is "unknown" (None / False). Anything else it raises is a litellm fault: it is
logged, one line, and also read as unknown, so a run goes on with the cost unknown rather than stopping.
"""
from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

SCHEMA_PREFIXES = ("openai/", "hosted_vllm/", "ollama_chat/")
"""Providers that take a JSON-schema response_format although litellm's price list does not say so (its support
check only knows listed models; forwarding works for local servers)."""

_NOT_LISTED = ("isn't mapped", "not mapped", "not found", "provider list", "LLM Provider NOT provided")


def _litellm() -> Any:
    from injector.engines.llm import import_litellm

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
    except Exception as exc:  # see the module's docstring
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
    except Exception as exc:  # see the module's docstring
        _swallowed("the response_format support", model, exc)
        return False


def per_token(price_in: float | None, price_out: float | None) -> tuple[float, float] | None:
    """Given prices (dollars per million tokens) per token, when both are given."""
    return (price_in / 1e6, price_out / 1e6) if price_in is not None and price_out is not None else None
