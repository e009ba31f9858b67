"""Issue 29, small items: one ETA on the progress bar, `--sweep`'s help, the demo-scores script's --help, and the
dry run's warning when the rate limits make a run take over an hour."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from injector.cli.commands import main
from injector.runner.progress import ProgressDisplay
from injector.runner.spec import RunProgress

ROOT = Path(__file__).resolve().parent.parent


def test_the_progress_bar_shows_one_eta(monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")  # wide enough for the whole status line
    stream = io.StringIO()
    with ProgressDisplay(stream, interactive=True) as display:
        display.update(RunProgress(planned=10, done=4))
    shown = stream.getvalue()
    assert shown.count("ETA") == 1 and "-:--:--" not in shown


def test_sweep_help_says_twenty_percent():
    result = CliRunner().invoke(main, ["eval", "--help"])
    assert "20% dev subset" in result.output and "20%%" not in result.output


def test_make_demo_scores_help_prints_usage_not_a_traceback(tmp_path):
    helped = subprocess.run([sys.executable, str(ROOT / "data" / "make_demo_scores.py"), "--help"],
                            capture_output=True, text=True)
    assert helped.returncode == 0 and "usage:" in helped.stdout and "Traceback" not in helped.stderr
    missing = subprocess.run([sys.executable, str(ROOT / "data" / "make_demo_scores.py"), str(tmp_path / "none")],
                             capture_output=True, text=True)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr and "no such file" in missing.stderr


def test_the_dry_run_warns_when_the_rate_limits_take_over_an_hour():
    result = CliRunner().invoke(main, ["run", "--category", "redundancy", "--dry-run", "--tpm", "1000"])
    assert result.exit_code == 0, result.output
    assert "time at the limits at least 1:" in result.output
    assert "warning: at --tpm 1000 this run takes over an hour" in result.output
    fast = CliRunner().invoke(main, ["run", "--category", "redundancy", "--dry-run", "--tpm", "1000000"])
    assert "time at the limits" in fast.output and "warning: at" not in fast.output
