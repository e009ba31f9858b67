"""A review plan's queues in the queue index (`queue_index.py`): one row per (reviewer, place in their queue) with
the candidate's category and the reviewer's own standing decision, and that reviewer's counts per (category,
status), so a reviewer's page, its status filter, its progress and a decision read a page's rows, not the queue.

Built with the queue index (from `review-plan.json`, which its signature covers) and derived like it; a new plan
that names the same gold items rebuilds these tables alone, on the queue already indexed. The build keeps each
reviewer's list of ids (`plan_pending`); a reviewer's rows are made from it on their first start (`make_queue`), so
a start indexes one queue of the plan, not all of them. From then on triggers keep a reviewer's own standing
decision (their latest review by time, then by insertion) and the counts as decisions arrive, whichever process
(and version of the app) writes them."""
from __future__ import annotations

import json
import sqlite3
from typing import Any

DROP = """
DROP TABLE IF EXISTS plan_queue;
DROP TABLE IF EXISTS plan_tally;
DROP TABLE IF EXISTS plan_categories;
DROP TABLE IF EXISTS plan_reviewers;
DROP TABLE IF EXISTS plan_pending;
DROP TRIGGER IF EXISTS plan_own_kept;
DROP TRIGGER IF EXISTS plan_tally_kept;
"""
SCHEMA = """
CREATE TABLE plan_queue (
    reviewer TEXT NOT NULL, place INTEGER NOT NULL, seq INTEGER NOT NULL, category TEXT NOT NULL,
    status TEXT NOT NULL, own_time TEXT NOT NULL, own_seq INTEGER NOT NULL, PRIMARY KEY (reviewer, place)
) WITHOUT ROWID;
CREATE TABLE plan_tally (reviewer TEXT NOT NULL, category TEXT NOT NULL, status TEXT NOT NULL, n INTEGER NOT NULL,
    PRIMARY KEY (reviewer, category, status)) WITHOUT ROWID;
CREATE TABLE plan_categories (reviewer TEXT NOT NULL, category TEXT NOT NULL, first INTEGER NOT NULL,
    PRIMARY KEY (reviewer, category)) WITHOUT ROWID;
CREATE TABLE plan_reviewers (reviewer TEXT PRIMARY KEY, number INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE plan_pending (reviewer TEXT PRIMARY KEY, ids TEXT NOT NULL);
"""
"""`plan_pending`: the queues not made yet, each as the plan lists its ids (a JSON array, each id once)."""
_FILL = """
INSERT INTO plan_queue
SELECT ?1, j.key, q.seq, q.category, coalesce(d.decision, ''), coalesce(d.time, ''), coalesce(d.seq, -1)
FROM json_each((SELECT ids FROM plan_pending WHERE reviewer = ?1)) j CROSS JOIN queue q ON q.id = j.value
LEFT JOIN temp.plan_own d ON d.id = j.value;
"""
"""One reviewer's queue (?1 the name) joined in SQLite: the array of ids is walked in its order (CROSS JOIN keeps
it the outer loop), so the rows arrive in the order of their primary key."""
_OWN = """
CREATE TEMP TABLE plan_own AS SELECT id, decision, time, seq, max(time || char(1) || printf('%020d', seq))
FROM decisions WHERE role = 'review' AND reviewer = ?1 GROUP BY id;
"""
"""The reviewer's latest review per candidate, by time then seq (the key sorts as the pair does: a time is text
above char(1), seq is zero-padded); the row's other columns are the latest's (SQLite's rule for a lone max)."""
_COUNTS = ("""
CREATE TEMP TABLE plan_groups AS SELECT category, status, count(*) AS n, min(place) AS first
    FROM plan_queue WHERE reviewer = ?1 GROUP BY category, status;
""", """
INSERT INTO plan_tally SELECT ?1, category, status, n FROM temp.plan_groups;
""", """
INSERT INTO plan_categories SELECT ?1, category, min(first) FROM temp.plan_groups GROUP BY category;
""", "DROP TABLE temp.plan_groups", "DROP TABLE temp.plan_own", "DELETE FROM plan_pending WHERE reviewer = ?1")
"""The reviewer's counts per (category, status) and each category's first place, once their rows are in."""
AFTER_FILL = """
CREATE UNIQUE INDEX plan_queue_by_seq ON plan_queue (reviewer, seq);
CREATE INDEX plan_queue_by_place ON plan_queue (reviewer, place);
CREATE TRIGGER plan_own_kept AFTER INSERT ON decisions WHEN NEW.role = 'review' BEGIN
    UPDATE plan_queue SET status = NEW.decision, own_time = NEW.time, own_seq = NEW.seq
    WHERE reviewer = NEW.reviewer AND seq = (SELECT seq FROM queue WHERE id = NEW.id)
        AND (NEW.time, NEW.seq) > (own_time, own_seq);
END;
CREATE TRIGGER plan_tally_kept AFTER UPDATE OF status ON plan_queue WHEN OLD.status != NEW.status BEGIN
    UPDATE plan_tally SET n = n - 1
    WHERE reviewer = OLD.reviewer AND category = OLD.category AND status = OLD.status;
    INSERT INTO plan_tally VALUES (NEW.reviewer, NEW.category, NEW.status, 1) ON CONFLICT DO UPDATE SET n = n + 1;
END;
"""
"""The reviewer's own standing decision is `ReviewStore.latest_of`'s (their latest review by time, then seq): the
trigger replaces it only by a later one, so an older import never does. A filtered view's index (`FILTER_INDEXES`)
is made on its first use, as the queue's are."""


FILTER_INDEXES = {("status",): "plan_queue_by_status", ("category",): "plan_queue_by_category",
                  ("category", "status"): "plan_queue_by_category_status"}
"""The filters of a view (in this order) -> the index over (reviewer, the filters, place) that serves it."""


def fill(db: sqlite3.Connection, queues: dict[str, list[str]]) -> None:
    """The plan's reviewers and their queues' ids (reviewer -> candidate ids in order) into the tables `SCHEMA`
    made: each queue's rows are made on its reviewer's first start (`make_queue`). Without a plan nothing is
    written."""
    db.executemany("INSERT INTO plan_reviewers VALUES (?, ?)", [(name, n) for n, name in enumerate(queues)])
    db.executemany("INSERT INTO plan_pending VALUES (?, ?)",
                   [(name, json.dumps(list(dict.fromkeys(ids)))) for name, ids in queues.items()])


def pending(db: sqlite3.Connection, reviewer: str) -> bool:
    """Whether the reviewer's queue of the plan is still to be made."""
    return db.execute("SELECT 1 FROM plan_pending WHERE reviewer = ?", (reviewer,)).fetchone() is not None


def make_queue(db: sqlite3.Connection, reviewer: str) -> None:
    """The reviewer's rows, counts and first places, made from their pending ids, inside the caller's
    transaction, after the queue is filled: an id the queue lacks is left out, an id listed twice keeps its first
    place. The indexes and triggers exist already (`AFTER_FILL`): they keep these rows from now on."""
    if not pending(db, reviewer):
        return
    for table in ("plan_own", "plan_groups"):
        db.execute(f"DROP TABLE IF EXISTS temp.{table}")
    for statement in (_OWN, "CREATE INDEX temp.plan_own_by_id ON plan_own (id)", _FILL, *_COUNTS):
        db.execute(statement, (reviewer,) if "?1" in statement else ())
