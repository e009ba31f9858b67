"""The README stays true: its Python example runs, and its two set-up commands are the ones CI relies on."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_python_examples_run_as_written_from_any_directory(tmp_path, monkeypatch, capsys):
    # A new user pastes them into a session opened anywhere: no relative path may depend on the checkout.
    monkeypatch.chdir(tmp_path)
    outputs = []
    for number, example in enumerate(re.findall(r"```python\n(.*?)```", README, re.DOTALL), 1):
        exec(compile(example, f"README.md python block {number}", "exec"), {})
        outputs.append(capsys.readouterr().out.splitlines())
    assert outputs == [["['undeclared_change'] [1]", "Candidate [4]", "3"], ["5 0"]]
    assert list(tmp_path.iterdir()) == []  # and they write nothing into the working directory


def test_setup_commands_come_first_and_ci_runs_the_test_command():
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.DOTALL)
    main_job, tests = commands[0], commands[1]
    assert "pip install -e ." in main_job and "inject " in main_job
    assert tests.endswith("python -m pytest -q")
    assert "python -m pytest -q" in (ROOT / ".ci" / "run").read_text()


def test_docs_and_code_point_only_inside_the_repository():
    # A user has the checkout, not the machine it was written on (a path like /work/shared/formats.md or
    # /work/venv/bin/python is a dead end for them).
    outside = re.compile(r"/work/|\.\./shared\b")
    files = [ROOT / "README.md", ROOT / "SECURITY.md", ROOT / "pyproject.toml", ROOT / "taxonomy.yaml",
             *(path for folder in ("bench", "data", "docs", "examples", "injector", "prompts", "taxonomies")
               for path in sorted((ROOT / folder).rglob("*"))
               if path.suffix in {".md", ".py", ".j2", ".yaml", ".toml", ".txt"})]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in files if path.is_file()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if outside.search(line)]
    assert found == []
