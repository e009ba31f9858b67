"""Third-party record formats: packages from tests/plugins/, installed offline into a directory of their own,
reach `inject` through the `prm_injector.formats` entry-point group; a broken one is a warning, never a crash."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PLUGINS = Path(__file__).parent / "plugins"
CLI = "import sys; from injector.cli import main; sys.exit(main(prog_name='inject'))"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A --target directory holding the demo and the broken plugin (built from copies: a build writes beside
    its sources)."""
    root = tmp_path_factory.mktemp("plugins")
    sources = [shutil.copytree(PLUGINS / name, root / "src" / name)
               for name in ("prm_injector_demo_format", "prm_injector_broken_format")]
    target = root / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--no-index", "--target", str(target), *map(str, sources)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return target


def inject(site: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    return subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def test_the_plugin_format_is_a_choice_of_input_format(site):
    for command in ("run", "render"):
        shown = inject(site, command, "--help")
        assert shown.returncode == 0, shown.stderr
        choices = shown.stdout.split("--input-format [", 1)[1].split("]", 1)[0].replace("\n", "").replace(" ", "")
        assert set(choices.split("|")) >= {"demo", "prm800k", "trajectories"}
    assert inject(site, "--help").returncode == 0


def test_help_imports_no_plugin_and_no_reader(site):
    probe = ("import sys, injector.cli; loaded = [m for m in sys.modules if m.startswith(('pydantic', "
             "'prm_injector_', 'injector.sources.formats.'))]; print(loaded)")
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


def test_a_file_in_the_plugin_format_is_read_given_or_detected(site, tmp_path):
    path = tmp_path / "demo.jsonl"
    path.write_text(json.dumps({"demo_problem": "What is 2 + 3?", "demo_solution": "2 + 3 = 5.\n\n# Answer\n\n5"})
                    + "\n", encoding="utf-8")
    for given in (["--input-format", "demo"], []):
        shown = inject(site, "render", "--input", str(path), *given, "--category", "redundancy", "--limit", "1")
        assert shown.returncode == 0, shown.stderr
        assert "What is 2 + 3?" in shown.stdout and "2 + 3 = 5." in shown.stdout
        how = "given" if given else "detected"
        assert f"demo ({how}); read 1, selected 1" in shown.stderr
    # detection loaded every plugin: the broken one was reported in one line, naming it
    [warning] = [line for line in shown.stderr.splitlines() if "broken" in line]
    assert warning == ("warning: plugin 'broken' (prm_injector.formats, from prm-injector-broken-format 0.1, "
                       "prm_injector_broken_format:FORMAT): cannot be loaded (ImportError: this plugin needs a "
                       "library that is not installed); skipped")


def test_choosing_the_broken_plugin_is_a_user_error(site):
    shown = inject(site, "render", "--input-format", "broken", "--category", "redundancy")
    assert shown.returncode == 2, shown.stderr
    lines = shown.stderr.strip().splitlines()
    assert lines[-1] == ("error: input format 'broken' comes from a plugin that cannot be loaded (see the warning "
                         "above); fix or uninstall that plugin, or choose another format")
    assert "Traceback" not in shown.stderr and lines[0].startswith("warning: plugin 'broken' (")
