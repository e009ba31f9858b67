"""A received run directory's review.sqlite and the files SQLite keeps beside it (-wal, -shm, -journal), opened by
name and followed through links by SQLite itself: when one is a symlink or no regular file, every review command
refuses with exit 2 naming it, and writes nothing through it (issue 24 item 3, the side files)."""
from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_review import make_run

import injector.curate.review.command as review_command
from injector.cli.commands import main
from injector.curate.review.store import Decision, ReviewStore

SIDE_FILES = ["review.sqlite", "review.sqlite-wal", "review.sqlite-shm", "review.sqlite-journal"]
COMMANDS = {
    "app": ["--no-browser"],
    "export": ["--export", "{tmp}/decisions.jsonl"],
    "import": ["--import", "{tmp}/import.jsonl"],
    "plan": ["--reviewers", "ann,bo"],
    "agreement": ["--agreement"],
    "adjudicate": ["--adjudicate", "--no-browser"],
}


def _victims(tmp_path: Path) -> dict[str, Path]:
    """A text file and another SQLite database of the user's (each planted name points at one of them)."""
    text = tmp_path / "victim.txt"
    text.write_text("keep me\nwhole")
    database = tmp_path / "victim.sqlite"
    with sqlite3.connect(database) as db:
        db.execute("CREATE TABLE mine (x)")
    db.close()
    return {"text": text, "database": database}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _received_run(tmp_path: Path) -> Path:
    """A reviewed run (a real store with a decision), as someone sends it; the import file beside it."""
    run_dir = make_run(tmp_path / "run")
    ReviewStore(run_dir).record(Decision(id="t1::counterfactual::0", decision="accept", reviewer="ann"))
    (tmp_path / "import.jsonl").write_text('{"id": "t1::counterfactual::0", "decision": "reject", "reason": "x", '
                                           '"reviewer": "bo", "time": "2026-01-01T00:00:00Z"}\n')
    return run_dir


@pytest.fixture
def never_served(monkeypatch):
    """The app would serve until Ctrl-C: here a start that gets that far fails at once instead."""
    def serve(*args, **kwargs):
        raise AssertionError("the app started on a refused run directory")

    monkeypatch.setattr(review_command, "serve", serve)


@pytest.mark.parametrize("name", SIDE_FILES)
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_linked_store_file_is_refused_by_every_review_command(tmp_path, never_served, name, command):
    victims = _victims(tmp_path)
    run_dir = _received_run(tmp_path)
    victim = victims["database" if name == "review.sqlite" else "text"]
    planted = run_dir / name
    planted.unlink(missing_ok=True)
    planted.symlink_to(victim)
    before = {path: _digest(path) for path in victims.values()}
    listing = sorted(os.listdir(run_dir))
    arguments = [part.format(tmp=tmp_path) for part in COMMANDS[command]]
    result = CliRunner().invoke(main, ["review", str(run_dir), *arguments])
    assert result.exit_code == 2, result.output
    assert result.output == f"error: {planted}: a symbolic link; a run directory holds only regular files under " \
                            "its own names (replace it with a regular file, or move it aside)\n"
    assert {path: _digest(path) for path in victims.values()} == before
    assert sorted(os.listdir(run_dir)) == listing and planted.is_symlink()  # nothing written beside it either
    assert not (tmp_path / "decisions.jsonl").exists()


@pytest.mark.parametrize("name", SIDE_FILES)
def test_a_store_file_that_is_a_fifo_or_a_directory_is_refused(tmp_path, name):
    """Through the real CLI in a subprocess: SQLite reading a FIFO would wait forever (the timeout is a hang guard,
    not a timed assertion)."""
    run_dir = _received_run(tmp_path)
    planted = run_dir / name
    for make in (os.mkfifo, os.mkdir):
        planted.unlink(missing_ok=True)
        make(planted)
        try:
            result = subprocess.run([sys.executable, "-c", "from injector.cli import main; main()", "review",
                                     str(run_dir), "--export", str(tmp_path / "decisions.jsonl")],
                                    capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"inject review --export hung on {planted} ({make.__name__})")
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"error: {planted}: not a regular file"), result.stderr
        assert not (tmp_path / "decisions.jsonl").exists()
        os.rmdir(planted) if planted.is_dir() else planted.unlink()


def test_build_and_stats_refuse_a_linked_wal_too(tmp_path):
    """Not review commands, but readers of the same store: the same refusal, the victim untouched."""
    victims = _victims(tmp_path)
    run_dir = _received_run(tmp_path)
    (run_dir / "review.sqlite-wal").symlink_to(victims["text"])
    for command in (["build", str(run_dir), "--out", str(tmp_path / "split")], ["stats", str(run_dir)]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 2, result.output
        assert f"{run_dir / 'review.sqlite-wal'}: a symbolic link" in result.output
    assert victims["text"].read_text() == "keep me\nwhole"
    assert not (tmp_path / "split").exists()
