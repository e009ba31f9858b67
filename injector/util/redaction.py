"""Secrets never leave the process: one `redact` for every provider message, log line and recorded command.

An API key reaches us three ways: the environment (`OPENAI_API_KEY`, ...), the userinfo of `--api-base`
(`http://user:KEY@host/v1`) and its query (`?api_key=KEY`). Providers echo keys back in error bodies ("Incorrect
API key provided: sk-..."), and litellm puts the api base into some messages; all of it goes through `redact`
before it reaches a reject, a log, the terminal or the manifest.
"""
from __future__ import annotations

import base64
import logging
import os
import re
import threading
from typing import Iterable
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

REDACTED = "[redacted]"
MIN_SECRET_LENGTH = 4
"""Shorter registered values are not replaced as plain text (a 2-letter user name would blank every "ab");
the URL patterns below still catch them where they sit in a URL."""
MIN_ENV_SECRET_LENGTH = 8
"""Environment values are replaced from this length: real keys are long, and `SORT_KEY=name` is not a secret."""

# OpenAI-style keys (sk-..., sk-proj-...), Anthropic (sk-ant-...), and the like.
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
# userinfo of any URL: scheme://user:password@host
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s?#]+@")
# the value of a query parameter or `name=value` whose name says it holds a secret
_SECRET_PARAMETER = re.compile(
    r"(?P<name>\b[\w\-]*(?:key|token|secret|password|passwd|signature|auth)[\w\-]*=)(?P<value>[^&\s\"',;]+)",
    re.IGNORECASE,
)
# environment variables whose value is a credential
_SECRET_ENV_NAME = re.compile(r"(?:KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)

_registered: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a value that must never be written out (e.g. a key the user passed inside --api-base)."""
    if value and len(value) >= MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def register_basic_credentials(user: str, password: str) -> None:
    """HTTP clients send a URL's userinfo as `Authorization: Basic base64(user:password)`, and providers echo that
    header back: the base64 (as written and percent-decoded, padded or not) is a secret too."""
    for pair in {f"{user}:{password}", f"{unquote(user)}:{unquote(password)}"}:
        encoded = base64.b64encode(pair.encode()).decode()
        register_secret(encoded)
        register_secret(encoded.rstrip("="))


def _environment_secrets() -> Iterable[str]:
    # Read at call time: a key exported after import is still caught. Only for error paths, so cheap enough.
    return (value for name, value in os.environ.items()
            if _SECRET_ENV_NAME.search(name) and len(value) >= MIN_ENV_SECRET_LENGTH)


def redact(text: str) -> str:
    """`text` with every known secret, key-like token, URL userinfo and secret-named parameter replaced."""
    if not text:
        return text
    with _lock:
        known = set(_registered)
    known.update(_environment_secrets())
    for secret in sorted(known, key=len, reverse=True):  # longest first: a key that contains another
        text = text.replace(secret, REDACTED)
    text = _KEY_LIKE.sub(REDACTED, text)
    text = _URL_USERINFO.sub(lambda match: match.group("scheme") + REDACTED + "@", text)
    return _SECRET_PARAMETER.sub(lambda match: match.group("name") + REDACTED, text)


def public_url(url: str) -> str:
    """`url` without userinfo, query or fragment (what may be stored); registers what it strips as secrets."""
    parts = urlsplit(url)
    if not parts.netloc:
        return redact(url)
    # A user name beside a password is a name, not a credential ("user", "admin"): as plain-text secrets such names
    # would blank every "role": "user" of a later log. Alone, or key-long, it is the credential (`http://KEY@host`).
    if parts.password is None or len(parts.username or "") >= MIN_ENV_SECRET_LENGTH:
        register_secret(parts.username)
    register_secret(parts.password)
    if parts.username is not None or parts.password is not None:
        register_basic_credentials(parts.username or "", parts.password or "")
    for _, value in parse_qsl(parts.query, keep_blank_values=False):
        register_secret(value)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def public_host(url: str | None) -> str | None:
    """Host and port of `url` (no userinfo), the part recorded in configuration and provenance."""
    if not url:
        return None
    return urlsplit(public_url(url)).netloc or redact(url)


URL_OPTIONS = ("--api-base",)
"""Options whose value is a URL: stored as `public_url` (the real value is still what the requests use)."""


def redact_command(argv: list[str]) -> list[str]:
    """A command line safe to record or print: URL options stripped to `public_url`, everything else `redact`ed."""
    safe: list[str] = []
    take_url = False
    for arg in argv:
        if take_url:
            safe.append(public_url(arg))
            take_url = False
        elif arg in URL_OPTIONS:
            safe.append(arg)
            take_url = True
        elif arg.startswith(tuple(f"{option}=" for option in URL_OPTIONS)):
            option, _, value = arg.partition("=")
            safe.append(f"{option}={public_url(value)}")
        else:
            safe.append(redact(arg))
    return safe


class RedactingFilter(logging.Filter):
    """Redacts log records (ours and litellm's) before any handler writes them."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True
