"""Issue 29 item 5: the card's "Reproduce" section lists the `inject run` commands that made the candidates (from
the runs' manifests), the build command, the toolkit version, the figures and the cost; a manifest is data only:
nothing it names is imported or run, no secret of it is shown, no value of it leaves the code block."""
from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from markdown_it import MarkdownIt

from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
from injector.cli.commands import main
from injector.util.redaction import redact_command
from injector.util.version import __version__


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture
def cli_run(tmp_path: Path) -> Path:
    """An `inject run` through the CLI (offline engine, bundled sample) whose manifest says it spent $1.50."""
    out = tmp_path / "run"
    result = invoke("run", "--category", "circular_logic", "--category", "redundancy", "--limit", "6",
                    "--out", str(out))
    assert result.exit_code == 0, result.output
    _edit_manifest(out, lambda manifest: manifest.update(spending={"total": 1.5, "largest_unit": 0.1}))
    return out


def _edit_manifest(run_dir: Path, change) -> dict:
    manifest = json.loads((run_dir / "manifest.json").read_text())
    change(manifest)
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return manifest


def _reproduce(card: str) -> str:
    return card.split("\n## Reproduce\n")[1]


def test_the_card_lists_the_run_and_build_commands_figures_and_cost(cli_run, tmp_path):
    python_run = tmp_path / "python-run"  # made from Python: its command is rebuilt from the recorded settings
    taxonomy = Taxonomy.load()
    run(load_trajectories(), RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy"]), out=python_run,
                                     limit=4, seed=3), OfflineEngine())
    _edit_manifest(python_run, lambda manifest: manifest.update(spending={"total": 0.5, "largest_unit": 0.1}))
    split = tmp_path / "split"
    build_args = ["build", str(cli_run), str(python_run), "--out", str(split), "--include-unreviewed"]
    assert invoke(*build_args).exit_code == 0
    section = _reproduce((split / "README.md").read_text())
    code = section.split("```bash\n")[1].split("\n```")[0].splitlines()
    run_manifest = json.loads((cli_run / "manifest.json").read_text())
    assert code[0].startswith(f"# run 1: {cli_run} (prm-injector {__version__}, finished, "
                              f"{run_manifest['counts']['candidates']} candidates, ")
    assert code[0].endswith("spent $1.5000)")
    assert code[1] == shlex.join(["inject", "run", "--category", "circular_logic", "--category", "redundancy",
                                  "--limit", "6", "--out", str(cli_run)])
    assert code[3] == "# made from Python: this command is rebuilt from the settings its manifest recorded"
    rebuilt = shlex.split(code[4])
    assert rebuilt[:2] == ["inject", "run"] and rebuilt[-2:] == ["--out", str(python_run)]
    for flag, value in (("--category", "redundancy"), ("--model", "offline"), ("--seed", "3"), ("--samples", "1")):
        assert rebuilt[rebuilt.index(flag) + 1] == value
    assert code[-2:] == ["# the split", shlex.join(["inject", *build_args])]
    assert f"Built with prm-injector {__version__}." in section
    rows = sum(len((split / "jsonl" / f.name).read_text().splitlines()) for f in (split / "jsonl").iterdir())
    units = run_manifest["counts"]["candidates"] + run_manifest["counts"]["rejects"]
    python_manifest = json.loads((python_run / "manifest.json").read_text())
    units += python_manifest["counts"]["candidates"] + python_manifest["counts"]["rejects"]
    assert f"- rows: {rows} (circular_logic " in section
    assert f"- funnel: units {units} → valid {rows} → verified 0 → reviewed 0 → accepted 0" in section
    assert "- cue AUC: " in section and "over all categories" in section
    assert (f"- cost: $2.0000 spent by the 2 runs (their manifests' recorded spend, every invocation); "
            f"${2.0 / rows:.4f} per candidate in the split ({rows}, 0 of them accepted by reviewers") in section


HOSTILE = ["inject", "run", "--out", "x\n```\n## Owned <b>bold</b> [link](http://evil)", "`touch card_marker`",
           "$(touch card_marker_2)", "--model", "evil_card_module", "--api-base",
           "http://user:sk-abcdefgh12345678@host/v1", "--note", "api_key=hunter2hunter2", "a\u2028b\x1b[31m",
           "````", "it's"]


def _words(line: str) -> list[str]:
    """A POSIX shell's words of one line of the card (quotes, `$'…'` with its escapes), parsed here, not run."""
    words, word, k, started = [], "", 0, False
    while k < len(line):
        char = line[k]
        if char == " ":
            if started:
                words.append(word)
            word, started, k = "", False, k + 1
            continue
        started = True
        if line.startswith("$'", k):
            end = k + 2
            while line[end] != "'":
                end += 2 if line[end] == "\\" else 1
            word += line[k + 2:end].encode("latin-1", "backslashreplace").decode("unicode_escape")
            k = end + 1
        elif char in "'\"":
            end = line.index(char, k + 1)
            word, k = word + line[k + 1:end], end + 1
        else:
            word, k = word + char, k + 1
    return [*words, word] if started else words


def test_a_hostile_manifest_stays_inside_the_code_block_and_nothing_it_names_runs(cli_run, tmp_path, monkeypatch):
    from injector.util import redaction

    # Redacting the manifest's --api-base registers its user name ("user") as a secret for the process: keep that
    # to this test, or every later test's "role": "user" would read [redacted].
    monkeypatch.setattr(redaction, "_registered", set())
    monkeypatch.chdir(tmp_path)
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "evil_card_module.py").write_text("open('imported_marker', 'w').close()\n")
    monkeypatch.syspath_prepend(str(modules))
    hostile = tmp_path / "hostile"
    shutil.copytree(cli_run, hostile)
    _edit_manifest(hostile, lambda manifest: manifest.update(
        command=HOSTILE, toolkit_version="0.1\n```\n# Injected heading", status="done\n\n## Status heading"))
    rebuilt = tmp_path / "rebuilt"  # a run from "Python" whose recorded settings are hostile
    shutil.copytree(cli_run, rebuilt)
    _edit_manifest(rebuilt, lambda manifest: (manifest.update(command=["python", "x.py"], config_hash="0" * 16),
                                              manifest["config"].update(input={"input": "in\n```\n# Heading `x`"},
                                                                        api_base_host="h\n```\n# Host heading")))
    split = tmp_path / "split"
    assert invoke("build", str(hostile), str(rebuilt), "--out", str(split), "--include-unreviewed").exit_code == 0
    card = (split / "README.md").read_text()
    assert "sk-abcdefgh12345678" not in card and "hunter2hunter2" not in card
    assert not any((tmp_path / name).exists() for name in ("card_marker", "card_marker_2", "imported_marker"))
    assert "evil_card_module" not in sys.modules
    tokens = MarkdownIt("commonmark").parse(card)
    start = next(k for k, token in enumerate(tokens) if token.type == "inline" and token.content == "Reproduce")
    after = tokens[start + 1:]
    assert not any(token.type == "heading_open" for token in after)  # nothing of the manifest makes a heading
    fences = [token for token in after if token.type == "fence"]
    assert len(fences) == 1 and fences[0].info == "bash"
    code = fences[0].content.splitlines()
    assert all(line.isprintable() for line in code)
    assert _words(code[1]) == redact_command(HOSTILE)  # every word exactly, one line, secrets redacted
    assert code[0].startswith("# run 1: ") and "0.1\\n```\\n# Injected heading" in code[0]
    assert code[3].endswith("(server host h\\n```\\n# Host heading: add its --api-base)")
    assert _words(code[4])[:4] == ["inject", "run", "--input", "in\n```\n# Heading `x`"]
    # Text outside the block says nothing a manifest wrote.
    outside = "".join(token.content for token in after if token.type == "inline")
    assert "Owned" not in outside and "Injected" not in outside and "Heading" not in outside
