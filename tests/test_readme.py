"""The README and the manual (docs/) stay true: their Python examples run, their commands name real options, their
figures are the measured ones, and the README's two set-up commands are the ones CI relies on."""
from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from pathlib import Path

import click

from injector.cli.commands import main
from injector.answer.contract import parse_answer
from injector.runner.estimates import prmbench_answers
from injector.sources import load_trajectories
from injector.taxonomy import Taxonomy
from injector.inject.validation import validate_answer

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
# The README first, then the manual's pages (the command reference is generated at build time: not among them).
PAGES = {"README.md": README, **{f"docs/{path.name}": path.read_text(encoding="utf-8")
                                 for path in sorted((ROOT / "docs").glob("*.md"))}}


def test_python_examples_run_as_written_from_any_directory(tmp_path, monkeypatch, capsys):
    # A new user pastes them into a session opened anywhere: no relative path may depend on the checkout.
    monkeypatch.chdir(tmp_path)
    outputs = []
    for page, text in PAGES.items():
        if page == "docs/extending.md":  # shipped modules, not session examples: test_extending_docs.py and
            continue                     # test_repeat_step_engine.py check them against the files
        for number, example in enumerate(re.findall(r"```python\n(.*?)```", text, re.DOTALL), 1):
            exec(compile(example, f"{page} python block {number}", "exec"), {})
            outputs.append(capsys.readouterr().out.splitlines())
    assert outputs == [["['undeclared_change'] [1]", "Candidate [2, 3]", "2"], ["5 0"], ["1 1.0"]]
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
    files = [ROOT / "README.md", ROOT / "SECURITY.md", ROOT / "pyproject.toml", ROOT / "taxonomy.yaml", ROOT / "mkdocs.yml",
             *(path for folder in ("bench", "data", "docs", "examples", "injector", "prompts", "taxonomies")
               for path in sorted((ROOT / folder).rglob("*"))
               if path.suffix in {".md", ".py", ".j2", ".yaml", ".toml", ".txt"})]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in files if path.is_file()
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if outside.search(line)]
    assert found == []


def test_the_recipes_acceptance_figures_are_the_replays():
    # PRMBench's GPT-4o answers (tests/fixtures/prmbench, Apache-2.0), as written (full) and as the same edits.
    taxonomy = Taxonomy.load()
    accepted, edit_codes = Counter(), Counter()
    for path in sorted((ROOT / "tests" / "fixtures" / "prmbench").glob("prm800k_train_p1_first400_4o_*.jsonl")):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        category = next(c for c in taxonomy.categories if c.prmbench_id == records[0]["classification"])
        for trajectory, record in zip(load_trajectories(path, "prmbench"), records):
            answers = prmbench_answers(record)
            full = validate_answer(taxonomy, category, trajectory, parse_answer(json.dumps(answers["full"])))
            edits = validate_answer(taxonomy, category, trajectory,
                                    parse_answer(json.dumps(answers["edits"]), edits=True))
            accepted.update(records=1, full=not full.codes, edits=not edits.codes)
            edit_codes.update(edits.codes)
    assert accepted == Counter(records=200, full=87, edits=147)
    assert edit_codes == Counter(label_leak=36, error_on_unchanged_step=13, question_edit_not_allowed=4)
    flat = " ".join(PAGES["docs/recipe.md"].split())
    assert "87 of 200 (43.5 %)" in flat and "147 of 200 (73.5 %)" in flat
    assert "label leaks (36), error steps on unchanged steps (13) and question edits where the category forbids them (4)" \
        in flat


def test_every_inject_command_in_the_readme_and_the_docs_names_real_commands_and_options():
    checked = 0
    for block in (block for text in PAGES.values() for block in re.findall(r"```bash\n(.*?)```", text, re.DOTALL)):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split("#")[0].strip()
            for command in re.findall(r"(?:^|&&|;|\|\||\bdo)\s*(inject\s[^;&|]*)", line):
                words = shlex.split(command)[1:]
                group: click.Command = main
                while isinstance(group, click.Group) and words and words[0] in group.commands:
                    group, words = group.commands[words[0]], words[1:]
                assert group is not main, command
                options = {opt for param in group.params for opt in param.opts + param.secondary_opts}
                unknown = [word.split("=")[0] for word in words if word.startswith("--")
                           and word.split("=")[0] not in options | {"--help"}]
                assert unknown == [], f"{command}: no such option {unknown}"
                checked += 1
    assert checked >= 20
