"""What a provider's refusal says, read the same way whichever client carried it (litellm or the openai SDK):
the response headers of a 429 (Retry-After, the spent rate window, its reset time), and whether a refusal is the
run's configuration (it will repeat for every unit: stop the run) or this unit's (reject it)."""
from __future__ import annotations

import math
import re
from typing import Any

from injector.util.errors import ProviderMisconfigured


def headers_of(exc: Exception) -> Any:
    """The provider's response headers carried by an exception (httpx's, case-insensitive), or {}."""
    return getattr(getattr(exc, "response", None), "headers", None) or {}


def spent_window(exc: Exception) -> str | None:
    """The rate window a 429 says is spent: "requests" or "tokens" when its `x-ratelimit-remaining-*` is 0."""
    headers = headers_of(exc)
    for window in ("requests", "tokens"):
        if str(headers.get(f"x-ratelimit-remaining-{window}", "")).strip() == "0":
            return window
    return None


def duration_seconds(value: str | None) -> float | None:
    """A reset time as providers write it (`6m0s`, `1.5s`, `20ms`, `1h2m`, or bare seconds) in seconds; None when
    absent or unreadable."""
    text = (value or "").strip()
    if re.fullmatch(r"\d+(\.\d+)?", text):
        return float(text)
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", text)
    if not parts or "".join(number + unit for number, unit in parts) != text:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(number) * scale[unit] for number, unit in parts)


def retry_after(exc: Exception) -> float | None:
    """Seconds the provider's `Retry-After` asks for; None when absent, unreadable, negative or not finite."""
    headers = headers_of(exc)
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
        seconds = float(value) if value is not None else None
    except (TypeError, ValueError):
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None  # not inf, nan


def rate_limit_wait(exc: Exception, retry_after_seconds: float | None) -> tuple[float | None, bool]:
    """How long a 429 asks the run to wait (Retry-After, else the spent window's reset time; None: unknown), and
    whether it says a rate window is spent."""
    spent = spent_window(exc)
    wait = retry_after_seconds
    if wait is None and spent:
        wait = duration_seconds(headers_of(exc).get(f"x-ratelimit-reset-{spent}"))
    return wait, spent is not None


UNROUTABLE = "LLM Provider NOT provided"
"""litellm's message for a model string it cannot route to any provider (raised before any request is sent)."""
_MISSING_MODEL = re.compile(r"model_not_found|\bmodel\b.{0,120}\b(does not exist|not found)", re.I | re.S)
_CONTEXT_LENGTH = re.compile(r"(?:maximum context length|context window|context length)\D{0,20}(\d+)", re.I)
_COMPLETION_PART = re.compile(r"(\d+) in the completion", re.I)


def misconfiguration(exc: Exception, error: Exception, *, model: str, api_base: str | None,
                     max_tokens: int | None) -> Exception:
    """`error` (the classified refusal of `exc`) as a `ProviderMisconfigured` when it will repeat for every unit —
    an unknown provider or model, a 404 on the model, a completion budget the context window cannot hold — with
    the likely fix; else `error` unchanged (one prompt too long stays that unit's reject)."""
    from injector.engines.base import ProviderError

    if not isinstance(error, ProviderError):
        return error
    message = str(error).strip().splitlines()[0] if str(error).strip() else type(exc).__name__
    status = getattr(exc, "status_code", None)
    if UNROUTABLE in str(error):
        return ProviderMisconfigured(f"model {model!r}: the provider refused it ({message}); "
                                     + "; ".join(model_fixes(model, api_base)))
    if status == 404 or _MISSING_MODEL.search(str(error)):
        fixes = model_fixes(model, api_base)
        if api_base:
            fixes.append("check that --api-base ends where the server's /chat/completions lives (often /v1)")
        return ProviderMisconfigured(f"model {model!r}: the provider does not know it ({message}); "
                                     + "; ".join(fixes))
    window = _CONTEXT_LENGTH.search(str(error))
    if window and max_tokens:
        completion = _COMPLETION_PART.search(str(error))
        asked = int(completion.group(1)) if completion else max_tokens
        if asked >= int(window.group(1)):
            return ProviderMisconfigured(
                f"model {model!r}: its context window ({window.group(1)} tokens) cannot hold the {asked} completion "
                f"tokens asked for, whatever the prompt ({message}); lower --max-tokens, e.g. --max-tokens "
                f"{max(1, int(window.group(1)) // 2)}")
    return error


def model_fixes(model: str, api_base: str | None) -> list[str]:
    """The likely fixes of a model string a provider does not know: the closest names in litellm's model list, and
    the `openai/` prefix an OpenAI-compatible server needs."""
    from injector.engines.model_info import similar_models

    fixes = []
    if suggestions := similar_models(model):
        fixes.append(f"did you mean {' or '.join(suggestions)}?")
    if api_base and "/" not in model:
        fixes.append(f"add openai/ before the name for an OpenAI-compatible server (--model openai/{model})")
    if not fixes:
        fixes.append("check the name in the provider's model list (litellm's: https://models.litellm.ai)")
    return fixes
