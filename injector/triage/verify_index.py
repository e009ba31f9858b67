"""What one `inject verify` pass looks up again by candidate or trajectory, kept on disk, not in memory.

A pass over a large run must not hold the run: the candidates still to judge are byte offsets in two arrays
(`PendingList`), and everything looked up by id — the latest verdict line of each candidate, the candidate ids
already seen, the original solutions' critiques already answered — is in a private temporary SQLite database
(`ScratchIndex`), deleted when closed, whose page cache bounds what stays in memory.
"""
from __future__ import annotations

import sqlite3
from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

from injector.triage.verdicts import JudgeAnswer, JudgeSettings, iter_verdicts


@dataclass(frozen=True)
class Pending:
    """A candidate still to verify: its line's byte offset in candidates.jsonl and its critique kind."""

    offset: int
    kind: str


class PendingList:
    """The candidates still to verify, in file order: 9 bytes each (an offset and a kind's number)."""

    def __init__(self) -> None:
        self.offsets = array("q")
        self.kind_numbers = bytearray()
        self.kinds: list[str] = []

    def append(self, item: Pending) -> None:
        if item.kind not in self.kinds:
            self.kinds.append(item.kind)
        self.offsets.append(item.offset)
        self.kind_numbers.append(self.kinds.index(item.kind))

    def __len__(self) -> int:
        return len(self.offsets)

    def __iter__(self) -> Iterator[Pending]:
        for offset, number in zip(self.offsets, self.kind_numbers):
            yield Pending(offset, self.kinds[number])


class ScratchIndex:
    """A private temporary SQLite database: on disk, deleted when closed (SQLite's name "" for a database)."""

    def __init__(self) -> None:
        self.db = sqlite3.connect("")
        self.db.executescript("""
            CREATE TABLE latest (id TEXT PRIMARY KEY, category TEXT, verdict TEXT, same INTEGER);
            CREATE TABLE seen (id TEXT PRIMARY KEY);
            CREATE TABLE original (trajectory TEXT, kind TEXT, sample INTEGER, answer TEXT,
                                   PRIMARY KEY (trajectory, kind, sample));
        """)
        self.verdicts = 0

    def read_verdicts(self, run_dir: Path, settings: JudgeSettings | None = None) -> None:
        """The latest verify.jsonl line of each candidate (a later line replaces an earlier one), and whether it
        was judged with `settings`."""
        self.db.execute("DELETE FROM latest")
        rows = ((record.id, record.category, record.verdict,
                 settings is not None and record.judge is not None and record.judge.same_as(settings))
                for record in iter_verdicts(run_dir))
        self.verdicts = self.db.executemany("INSERT OR REPLACE INTO latest VALUES (?, ?, ?, ?)", rows).rowcount

    def judged_with_same_settings(self, candidate_id: str) -> bool:
        if not self.verdicts:  # a first pass: nothing to look up
            return False
        row = self.db.execute("SELECT same FROM latest WHERE id = ?", (candidate_id,)).fetchone()
        return bool(row and row[0])

    def first_time(self, candidate_id: str) -> bool:
        """True the first time this id is given (two writers that both finished a unit wrote it twice)."""
        return self.db.execute("INSERT OR IGNORE INTO seen VALUES (?)", (candidate_id,)).rowcount == 1

    def verdict_counts(self, candidate_ids: Iterable[str]) -> tuple[int, dict[str, Counter[str]]]:
        """How many distinct `candidate_ids`, and category -> verdict -> those whose latest line gives it."""
        self.db.execute("DELETE FROM seen")
        self.db.executemany("INSERT OR IGNORE INTO seen VALUES (?)", ((each,) for each in candidate_ids))
        total = self.db.execute("SELECT count(*) FROM seen").fetchone()[0]
        counts: dict[str, Counter[str]] = {}
        for category, verdict, count in self.db.execute(
                "SELECT category, verdict, count(*) FROM latest JOIN seen USING (id) GROUP BY category, verdict"):
            counts.setdefault(category, Counter())[verdict] = count
        return total, counts

    def put_original(self, key: tuple[str, str, int], answer: JudgeAnswer) -> None:
        """An original solution's critique, answered: later candidates of its trajectory read it from here."""
        self.db.execute("INSERT OR REPLACE INTO original VALUES (?, ?, ?, ?)",
                        (*key, answer.model_dump_json(exclude_unset=True)))

    def original(self, key: tuple[str, str, int]) -> JudgeAnswer | None:
        row = self.db.execute("SELECT answer FROM original WHERE trajectory = ? AND kind = ? AND sample = ?",
                              key).fetchone()
        return None if row is None else JudgeAnswer.model_validate_json(row[0])

    def close(self) -> None:
        self.db.close()
