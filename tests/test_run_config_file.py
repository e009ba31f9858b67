"""Issue 29: `inject run --config run.yaml` takes the options from a file, checked as the flags are (the same
request model), flags overriding the file; the same settings give the same run configuration either way."""
from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from injector.cli.commands import main

CONFIG = """\
category: [circular_logic, redundancy]
limit: 2
seed: 3
samples: 2
output-mode: full
max-attempts: 2
concurrency: 4
temperature: 0.5
max_tokens: 512
duplicate-ids: first
retry-rejects: true
"""
FLAGS = ["--category", "circular_logic", "--category", "redundancy", "--limit", "2", "--seed", "3", "--samples", "2",
         "--output-mode", "full", "--max-attempts", "2", "--concurrency", "4", "--temperature", "0.5",
         "--max-tokens", "512", "--duplicate-ids", "first", "--retry-rejects"]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def test_a_config_file_gives_the_manifest_the_flags_give(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(CONFIG)
    from_file, from_flags = tmp_path / "a", tmp_path / "b"
    assert invoke("run", "--config", str(config), "--out", str(from_file)).exit_code == 0
    assert invoke("run", *FLAGS, "--out", str(from_flags)).exit_code == 0
    assert manifest(from_file)["config"] == manifest(from_flags)["config"]
    assert manifest(from_file)["config_hash"] == manifest(from_flags)["config_hash"]
    assert manifest(from_file)["counts"] == manifest(from_flags)["counts"]


def test_flags_override_the_file_and_the_file_is_checked_like_flags(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text(CONFIG)
    out = tmp_path / "run"
    assert invoke("run", "--config", str(config), "--seed", "5", "--out", str(out)).exit_code == 0
    assert manifest(out)["config"]["seed"] == 5 and manifest(out)["config"]["samples"] == 2
    config.write_text("category: circular_logic\nbogus: 1\n")
    result = invoke("run", "--config", str(config))
    assert result.exit_code == 2 and "unknown option 'bogus'" in result.output and "max-cost" in result.output
    config.write_text("category: circular_logic\nlimit: 0\n")
    result = invoke("run", "--config", str(config))
    assert result.exit_code == 2 and "limit" in result.output and "Traceback" not in result.output
    config.write_text("category: [circular_logic\n")
    result = invoke("run", "--config", str(config))
    assert result.exit_code == 2 and f"{config}:2: not YAML" in result.output
