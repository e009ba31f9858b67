"""The one clock records are stamped with: UTC, to the second, ISO 8601."""
from __future__ import annotations

from datetime import datetime, timezone


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
