"""Snapshot comparison for rendered prompts: prompt changes show up as diffs in review."""
from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest


def assert_snapshot(text: str, path: Path, test_file: str) -> None:
    """Compare `text` with the snapshot at `path`; with UPDATE_SNAPSHOTS=1, write it instead."""
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return
    assert path.is_file(), f"no snapshot {path}; create it with UPDATE_SNAPSHOTS=1 pytest {test_file}"
    expected = path.read_text(encoding="utf-8")
    if text != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(keepends=True), text.splitlines(keepends=True), str(path), "rendered", n=2
        ))
        pytest.fail(f"{path.name} changed; if intended, run UPDATE_SNAPSHOTS=1 pytest {test_file}\n{diff}")
