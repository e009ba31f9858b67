"""Which worker does a unit: a stable hash of the unit id, so every executor that spreads a run (Ray workers, local
worker processes) splits the same units the same way, whatever order the input comes in and on every machine."""
from __future__ import annotations

import hashlib


def shard_of(unit_id: str, shards: int) -> int:
    """The shard (0 .. shards-1) of `unit_id`: its BLAKE2b hash modulo `shards`.

    Not Python's `hash()`, which is salted per process: two processes must agree on every unit's shard.
    """
    if shards < 1:
        raise ValueError(f"shards must be at least 1, not {shards}")
    digest = hashlib.blake2b(unit_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards
