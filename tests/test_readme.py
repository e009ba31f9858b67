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
