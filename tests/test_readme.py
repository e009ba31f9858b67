"""The README stays true: its Python example runs, and its two set-up commands are the ones CI relies on."""
from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_python_example_runs(capsys):
    [example] = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    cwd = os.getcwd()
    os.chdir(ROOT)  # the example reads data/sample.jsonl relative to the checkout
    try:
        exec(compile(example, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    assert capsys.readouterr().out.split("\n")[:2] == ["['undeclared_change'] [1]", "3"]


def test_setup_commands_come_first_and_ci_runs_the_test_command():
    commands = re.findall(r"```bash\n(.*?)\n```", README, re.DOTALL)
    main_job, tests = commands[0], commands[1]
    assert "pip install -e ." in main_job and "inject " in main_job
    assert tests.endswith("python -m pytest -q")
    assert "python -m pytest -q" in (ROOT / ".ci" / "run").read_text()
