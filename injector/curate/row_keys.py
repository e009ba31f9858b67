"""The keys of a build's rows in an SQLite table beside the spill of their records (`row_spill.py`), so what a build
holds in memory does not grow with its rows: ids made unique, PRMBench's idx numbered, rows dropped, splits assigned
and every order the split's files are written in are SQL over the table, sorted on disk by SQLite and read back a
key at a time. The orders are those `rows._unique_ids`, `rows._unique_idx` and `build.assign_splits` give in memory
(SQLite compares text by its UTF-8 bytes, which is Python's order of code points)."""
from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Iterator

from injector.util.errors import UserError

_FIELDS = ("id", "run", "category", "classification", "source_idx", "trajectory_id", "sample", "problem_key", "idx",
           "reviewed", "_config_hash", "_verdict", "_audit_flagged", "seq", "offset")
_COLUMNS = ", ".join(f'"{name}"' for name in _FIELDS)
_TABLE = ("CREATE TABLE keys (id TEXT NOT NULL, run TEXT, category TEXT, classification TEXT, source_idx TEXT, "
          "trajectory_id TEXT, sample INTEGER, problem_key TEXT, idx TEXT, reviewed INTEGER, _config_hash TEXT, "
          "_verdict TEXT, _audit_flagged INTEGER, seq INTEGER PRIMARY KEY, offset INTEGER, split TEXT)")
SOURCES_FROM = 1 << 40
"""The first `seq` of the sources added as correct controls: they come after every candidate, as in `collect_rows`."""
CACHE_KIB = 16 * 1024
"""SQLite's page cache (and so its sorter's memory before it spills to temporary files), in KiB."""
SPLIT_ORDER = "category, trajectory_id, sample, run, id, seq"
"""A split's rows in `assign_splits`' order."""
PRMBENCH_ORDER = "classification, idx, seq"
"""PRMBench's files in (classification, idx) order, ties in the order the rows were read (Python's stable sort)."""


def stable_unit(seed: int, key: str) -> float:
    """A number in [0, 1) fixed by (seed, key): the same split on every machine and every run."""
    digest = hashlib.sha256(f"{seed}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class KeyTable:
    """One build's row keys (`row_spill.RowKey`'s fields, and the split each row is in), an SQLite file at `path`.

    Sized and iterable as the build's rows are (`BuildReport.rows`): its length, and its keys in the order they
    were read while the table is open (the build closes it with its staging directory)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = sqlite3.connect(path, isolation_level=None)
        for pragma in ("journal_mode=OFF", "synchronous=OFF", f"cache_size=-{CACHE_KIB}", "temp_store=FILE"):
            self._db.execute(f"PRAGMA {pragma}")
        self._db.execute(_TABLE)
        self._db.execute("CREATE TABLE sources_seen (trajectory_id TEXT PRIMARY KEY) WITHOUT ROWID")
        self._db.execute("BEGIN")  # every key is added in one transaction, committed by `finish_reading`
        self._next = {False: 0, True: SOURCES_FROM}
        self._count: int | None = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError("the build's row keys are gone with its staging directory; read the split's files")
        return self._db

    def add(self, row: Any, offset: int, *, source: bool = False) -> None:
        """The key of `row` (a `SplitRow`) whose record starts at `offset` in the spill; sources after candidates."""
        seq = self._next[source]
        self._next[source] += 1
        self.db.execute(f"INSERT INTO keys ({_COLUMNS}) VALUES ({', '.join('?' * len(_FIELDS))})",
                        (row.id, row.run, row.category, row.classification, row.source_idx, row.trajectory_id,
                         row.sample, row.problem_key, row.source_idx, row.reviewed, row._config_hash, row._verdict,
                         row._audit_flagged, seq, offset))

    def seen_sources(self) -> SeenTrajectories:
        """The trajectories whose source is already a row, as a set on disk (`rows._RowCollector.sources`)."""
        return SeenTrajectories(self)

    def finish_reading(self) -> None:
        """Every key is in: ids made unique (`rows._unique_ids`), then PRMBench's idx numbered (`rows._unique_idx`)."""
        self.db.execute("COMMIT")
        self.db.execute("CREATE INDEX keys_id ON keys (id)")
        self._unique_ids()
        self._unique_idx()

    def _unique_ids(self) -> None:
        db = self.db
        db.execute("CREATE TABLE repeated (id TEXT PRIMARY KEY) WITHOUT ROWID")
        db.execute("INSERT INTO repeated SELECT id FROM keys GROUP BY id HAVING count(*) > 1")
        db.execute("UPDATE keys SET id = id || '~' || substr(_config_hash, 1, 8) WHERE id IN (SELECT id FROM repeated)")
        if db.execute("SELECT 1 FROM keys GROUP BY id HAVING count(*) > 1 LIMIT 1").fetchone() is None:
            return
        row_id, first_run, run = db.execute(
            "SELECT later.id, (SELECT first.run FROM keys first WHERE first.id = later.id ORDER BY first.seq LIMIT 1), "
            "later.run FROM keys later WHERE EXISTS (SELECT 1 FROM keys earlier WHERE earlier.id = later.id AND "
            "earlier.seq < later.seq) ORDER BY later.seq LIMIT 1").fetchone()
        raise UserError(f"candidate {row_id!r} is in runs {first_run!r} and {run!r} made with "
                        "the same configuration (the same run given twice, or a copy of it); give each run once")

    def _unique_idx(self) -> None:
        db = self.db
        db.execute("CREATE TABLE numbered (seq INTEGER PRIMARY KEY, n INTEGER)")
        db.execute("INSERT INTO numbered SELECT seq, n FROM (SELECT seq, row_number() OVER (PARTITION BY "
                   "classification, source_idx ORDER BY trajectory_id, sample, run, id, seq) AS n FROM keys) "
                   "WHERE n > 1")
        db.execute("UPDATE keys SET idx = source_idx || '_' || (SELECT n FROM numbered WHERE numbered.seq = keys.seq) "
                   "WHERE seq IN (SELECT seq FROM numbered)")

    def drop(self, ids: Iterable[str]) -> None:
        """Leave out the rows of these (unique) ids."""
        self.db.executemany("DELETE FROM keys WHERE id = ?", ((row_id,) for row_id in ids))

    def keep_only(self, ids: Iterable[str]) -> None:
        """Leave out every row whose id is not one of `ids`."""
        self.db.execute("CREATE TABLE kept (id TEXT PRIMARY KEY) WITHOUT ROWID")
        self.db.executemany("INSERT OR IGNORE INTO kept VALUES (?)", ((row_id,) for row_id in ids))
        self.db.execute("DELETE FROM keys WHERE id NOT IN (SELECT id FROM kept)")

    def assign_splits(self, *, by: str, test_size: float | None, seed: int, reserved: Iterable[str]) -> None:
        """Each row's split, as `build.assign_splits` gives it: its category, or train/test by source problem (its
        problem key, else its trajectory id); a split named like a `reserved` directory is refused."""
        if by == "category":
            self.db.execute("UPDATE keys SET split = category")
        else:
            self.db.create_function("stable_unit", 1, lambda key: stable_unit(seed, key), deterministic=True)
            self.db.execute("UPDATE keys SET split = CASE WHEN stable_unit(CASE WHEN problem_key IS NULL OR "
                            "problem_key = '' THEN trajectory_id ELSE problem_key END) < ? THEN 'test' ELSE 'train' "
                            "END", (test_size or 0.0,))
        clash = sorted(set(self.split_counts()) & set(reserved))
        if clash:
            raise UserError(f"split name {clash[0]!r} clashes with an export directory; rename the category")

    def split_counts(self) -> dict[str, int]:
        """Rows per split, by split name."""
        return dict(self.db.execute("SELECT split, count(*) FROM keys GROUP BY split ORDER BY split").fetchall())

    def in_split(self, name: str) -> Iterator[Any]:
        """The keys of one split, in `assign_splits`' order."""
        return self._keys(f"WHERE split = ? ORDER BY {SPLIT_ORDER}", (name,))

    def in_prmbench_order(self) -> Iterator[Any]:
        return self._keys(f"ORDER BY {PRMBENCH_ORDER}")

    def _keys(self, clause: str, parameters: tuple[Any, ...] = ()) -> Iterator[Any]:
        from injector.curate.row_spill import RowKey

        for values in self.db.execute(f"SELECT {_COLUMNS} FROM keys {clause}", parameters):
            key = RowKey(*values)
            key.reviewed = bool(key.reviewed)
            key._audit_flagged = None if key._audit_flagged is None else bool(key._audit_flagged)
            yield key

    def __iter__(self) -> Iterator[Any]:
        """The keys in the order their rows were read (`seq`)."""
        return self._keys("ORDER BY seq")

    def __len__(self) -> int:
        if self._count is not None:
            return self._count
        return int(self.db.execute("SELECT count(*) FROM keys").fetchone()[0])

    def close(self) -> None:
        """Close the file, keeping the number of rows (`len` after the build)."""
        if self._db is not None:
            try:
                self._count = len(self)
            except sqlite3.Error:  # a build stopped by a full disk: nothing will ask
                self._count = 0
            self._db.close()
            self._db = None


class SeenTrajectories:
    """A set of trajectory ids held in the key table (`add` and `in`), for a source row per trajectory."""

    def __init__(self, table: KeyTable) -> None:
        self._table = table

    def __contains__(self, trajectory_id: object) -> bool:
        return self._table.db.execute("SELECT 1 FROM sources_seen WHERE trajectory_id = ?",
                                      (trajectory_id,)).fetchone() is not None

    def add(self, trajectory_id: str) -> None:
        self._table.db.execute("INSERT OR IGNORE INTO sources_seen VALUES (?)", (trajectory_id,))
