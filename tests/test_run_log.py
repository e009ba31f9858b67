"""Issue 29: a run writes `<out>/log.jsonl` (time, level, event, unit id), over its invocations; `--verbose` shows
the events on the terminal."""
from __future__ import annotations

import json

from click.testing import CliRunner

from injector.cli.commands import main


def test_a_run_writes_a_structured_log_and_verbose_shows_it(tmp_path):
    out = tmp_path / "run"
    quiet = CliRunner().invoke(main, ["run", "--category", "redundancy", "--limit", "2", "--out", str(out)])
    assert quiet.exit_code == 0, quiet.output
    assert "unit_done" not in quiet.output and "::redundancy::0: " not in quiet.output
    lines = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [line["event"] for line in lines] == ["run_started", "unit_done", "unit_done", "run_finished"]
    assert all({"time", "level", "event", "unit", "message"} <= set(line) for line in lines)
    units = [line for line in lines if line["event"] == "unit_done"]
    assert all(line["unit"].endswith("::redundancy::0") and line["outcome"] in ("accepted", "rejected")
               for line in units)
    verbose = CliRunner().invoke(main, ["run", "--category", "redundancy", "--limit", "3", "--out", str(out),
                                        "--verbose"])
    assert verbose.exit_code == 0, verbose.output
    assert "::redundancy::0: " in verbose.output and "run finished" in verbose.output
    events = [json.loads(line)["event"] for line in (out / "log.jsonl").read_text().splitlines()]
    assert events[4:] == ["run_started", "unit_done", "run_finished"]  # appended: one more unit, the rest skipped
