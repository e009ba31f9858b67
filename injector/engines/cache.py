"""Request cache: answers already paid for, in SQLite, so a rerun never pays twice.

litellm's own cache is not usable here (no disk backend; its key ignores the api base). The key covers everything
that changes the answer — model, api base, messages, sampling parameters, response schema — and never an API key.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir

from injector.util.errors import WriteFailed
from injector.util.json_bounds import loads_bounded, too_long


def default_cache_path() -> Path:
    return Path(user_cache_dir("prm-injector")) / "requests.sqlite"


_CACHE_HINT = "free space or fix the permissions, choose another --cache, or pass --no-cache"


def request_key(request: dict[str, Any]) -> str:
    """SHA-256 of the request's answer-relevant fields, canonically serialized."""
    return hashlib.sha256(json.dumps(request, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


class RequestCache:
    """A small SQLite key-value store of answers; safe for several processes (WAL)."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        # Opened for writing here, before any request is sent: a cache that cannot be written stops the run early.
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, text TEXT NOT NULL, usage TEXT NOT NULL,"
                " cost REAL, created REAL NOT NULL)"
            )
        except (OSError, sqlite3.Error) as exc:
            raise WriteFailed(self.path, exc, _CACHE_HINT) from None

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT text, usage, cost FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:  # a cache file is a file like any other: an entry that is not what `put` writes is dropped, not replayed
            usage = loads_bounded(row[1], max_bytes=64 * 1024)
        except (ValueError, TypeError):
            usage = None
        if not isinstance(row[0], str) or not isinstance(usage, dict) or too_long(row[0]):
            self._db.execute("DELETE FROM answers WHERE key = ?", (key,))
            return None
        return {"text": row[0], "usage": usage, "cost": row[2]}

    def put(self, key: str, text: str, usage: dict[str, int], cost: float | None) -> None:
        try:
            self._db.execute(
                "INSERT OR REPLACE INTO answers (key, text, usage, cost, created) VALUES (?, ?, ?, ?, ?)",
                (key, text, json.dumps(usage), cost, time.time()),
            )
        except sqlite3.Error as exc:  # "database or disk is full", "attempt to write a readonly database"
            raise WriteFailed(self.path, exc, _CACHE_HINT) from None

    def close(self) -> None:
        self._db.close()
