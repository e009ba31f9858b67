"""Issue 29: a run directory refused for a different configuration says what differs, old -> new, and how to go on."""
from __future__ import annotations

from click.testing import CliRunner

from injector.cli.commands import main
from injector.runner.configuration import config_differences


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_a_refused_configuration_names_each_differing_setting(tmp_path):
    out = str(tmp_path / "run")
    assert invoke("run", "--category", "redundancy", "--limit", "1", "--out", out).exit_code == 0
    result = invoke("run", "--category", "redundancy", "--limit", "1", "--out", out, "--seed", "3",
                    "--samples", "2")
    assert result.exit_code == 2
    assert "holds a run with a different configuration:\n  samples: 1 -> 2\n  seed: 0 -> 3\n" in result.output
    assert "choose another --out" in result.output and "--concurrency" in result.output
    # What may change between invocations does not make a different configuration.
    assert invoke("run", "--category", "redundancy", "--limit", "2", "--out", out, "--concurrency",
                  "2").exit_code == 0


def test_differences_are_dotted_paths_with_absent_settings_shown():
    old = {"input": {"path": "a.jsonl", "format": "prm800k"}, "temperature": 1.0}
    new = {"input": {"path": "b.jsonl", "format": "prm800k"}, "temperature": 0.7, "schema": False}
    assert config_differences(old, new) == ['input.path: "a.jsonl" -> "b.jsonl"', "temperature: 1.0 -> 0.7",
                                            "schema: (none) -> false"]
