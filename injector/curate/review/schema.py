"""The review store's tables (`store.py`), and the migrations of stores written by earlier versions."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS decisions (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL,
    decision TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    corrected_error_steps TEXT,
    edited_steps TEXT,
    reviewer TEXT NOT NULL DEFAULT '',
    time TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_by_id ON decisions (id);
"""
MIGRATE_TO_2 = """
ALTER TABLE decisions ADD COLUMN role TEXT NOT NULL DEFAULT 'review';
CREATE INDEX IF NOT EXISTS decisions_by_reviewer ON decisions (id, reviewer);
PRAGMA user_version = 2;
"""
MIGRATE_TO_3 = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS standing (
    id TEXT PRIMARY KEY, seq INTEGER NOT NULL, decision TEXT NOT NULL, final INTEGER NOT NULL, time TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS candidates (id TEXT PRIMARY KEY, category TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tally (
    category TEXT NOT NULL, decision TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (category, decision)
) WITHOUT ROWID;
INSERT OR REPLACE INTO standing SELECT id, seq, decision, role = 'adjudication', time FROM decisions
    ORDER BY role = 'adjudication', time, seq;
CREATE TRIGGER IF NOT EXISTS decisions_standing AFTER INSERT ON decisions BEGIN
    INSERT INTO standing VALUES (NEW.id, NEW.seq, NEW.decision, NEW.role = 'adjudication', NEW.time)
    ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, decision = excluded.decision, final = excluded.final,
        time = excluded.time
    WHERE (excluded.final, excluded.time, excluded.seq) > (standing.final, standing.time, standing.seq);
END;
CREATE TRIGGER IF NOT EXISTS standing_new AFTER INSERT ON standing BEGIN
    INSERT INTO tally SELECT category, NEW.decision, 1 FROM candidates WHERE id = NEW.id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS standing_changed AFTER UPDATE OF decision ON standing
WHEN OLD.decision != NEW.decision BEGIN
    UPDATE tally SET n = n - 1
    WHERE decision = OLD.decision AND category = (SELECT category FROM candidates WHERE id = OLD.id);
    INSERT INTO tally SELECT category, NEW.decision, 1 FROM candidates WHERE id = NEW.id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER IF NOT EXISTS candidate_new AFTER INSERT ON candidates BEGIN
    INSERT INTO tally SELECT NEW.category, decision, 1 FROM standing WHERE id = NEW.id
    ON CONFLICT DO UPDATE SET n = n + 1;
END;
PRAGMA user_version = 3;
COMMIT;
"""
"""Version 3 keeps, next to the history, the standing decision per candidate, the categories of the candidates
under review and the count of standing decisions per category, all kept by triggers (so every writer keeps them,
whatever its version): the app's progress is then a read of a few rows, and a page reads the decisions of its own
candidates only, never the whole table. The backfill runs before the triggers on `standing` exist: `candidates` is
empty then, so the tally starts at nothing and grows as candidates are registered."""
