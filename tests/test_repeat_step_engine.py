"""The repeat-step engine (docs/extending.md, "A new engine"): selected by name, its candidates validate, and the
doc's code is the shipped file; a plugin package registering an engine shows in `inject run --help` and runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from injector.cli.commands import main
from injector.engines import from_model
from injector.engines.registry import named_kinds
from injector.engines.repeat_step import RepeatStepEngine

ROOT = Path(__file__).resolve().parents[1]


def test_the_name_selects_the_engine_and_its_candidates_validate(tmp_path):
    assert isinstance(from_model("repeat-step"), RepeatStepEngine)
    assert "repeat-step" in named_kinds()
    result = CliRunner().invoke(main, ["run", "--category", "redundancy", "--model", "repeat-step", "--limit", "3",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    candidates = [json.loads(line) for line in (tmp_path / "run" / "candidates.jsonl").read_text().splitlines()]
    assert len(candidates) == 3
    for candidate in candidates:
        (step,) = candidate["error_steps"]
        steps = candidate["modified_process"]
        assert steps[step - 1] == steps[step - 2]  # the error step says again what the step before it said


def test_a_named_engine_takes_no_servers():
    result = CliRunner().invoke(main, ["run", "--category", "redundancy", "--model", "repeat-step",
                                       "--api-base", "http://127.0.0.1:9/v1", "--api-base", "http://127.0.0.1:8/v1"])
    assert result.exit_code == 2 and "the repeat-step engine sends no requests" in result.output
    assert "--api-base" in result.output and "`" not in result.output  # settings shown as flags


def test_the_docs_walk_through_is_the_shipped_file():
    doc = (ROOT / "docs" / "extending.md").read_text(encoding="utf-8")
    section = doc.split("## A new engine", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert code == (ROOT / "injector" / "engines" / "repeat_step.py").read_text(encoding="utf-8")


def test_an_installed_engine_plugin_is_listed_and_runs(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(target), str(ROOT / "tests" / "plugins" / "prm_injector_echo_engine")],
                   check=True, capture_output=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
    inject = [sys.executable, "-c", "from injector.cli import main; main()"]
    shown = subprocess.run([*inject, "run", "--help"], env=env, capture_output=True, text=True, check=True)
    assert "echo-first" in shown.stdout
    ran = subprocess.run([*inject, "run", "--category", "redundancy", "--model", "echo-first", "--limit", "1",
                          "--out", str(tmp_path / "run")], env=env, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert len((tmp_path / "run" / "candidates.jsonl").read_text().splitlines()) == 1
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["config"]["engine"] == "echo-first"
