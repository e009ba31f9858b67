"""What litellm's model list says about a model: its prices and whether it takes a JSON-schema response_format.

The one owner of these look-ups (the LLM, Router and batch engines ask here). litellm raises a bare `Exception` for
a model it does not list; that is "unknown" (None / False). Anything else it raises is a litellm fault: it is
logged, one line, and also read as unknown, so a run goes on with the cost unknown rather than stopping.
"""
from __future__ import annotations

import functools
import logging
import os
from typing import Any

from injector.util.redaction import RedactingFilter

log = logging.getLogger(__name__)

SCHEMA_PREFIXES = ("openai/", "hosted_vllm/", "ollama_chat/")
"""Providers that take a JSON-schema response_format although litellm's price list does not say so (its support
check only knows listed models; forwarding works for local servers)."""

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


def similar_models(model: str, limit: int = 3) -> list[str]:
    """Chat models in litellm's (offline) model list whose names are closest to `model`, closest first: the likely
    fix of a typo ("gtp-4o" -> "gpt-4o"). A provider prefix is kept on the suggestions."""
    import difflib

    prefix, _, name = model.rpartition("/")
    try:
        listed = [key for key, info in _litellm().model_cost.items()
                  if isinstance(info, dict) and info.get("mode") == "chat"]
    except Exception as exc:  # a suggestion is a courtesy: never the reason a message is not shown
        log.debug("no model list for suggestions (%s)", exc)
        return []
    matches = difflib.get_close_matches(name, listed, n=limit, cutoff=0.75)
    return [f"{prefix}/{match}" if prefix and "/" not in match else match for match in matches]
