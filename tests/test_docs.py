"""The manual (docs/, built by mkdocs.yml) holds together: every link from the README or a page to a page resolves,
anchors included; every page is in the nav; the command reference is generated for every command and option; and
no user-facing text carries an internal reference (an issue number, a commit id)."""
from __future__ import annotations

import importlib.util
import re
import unicodedata
from pathlib import Path

import click
import yaml
from click.testing import CliRunner

from injector.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _hook():
    spec = importlib.util.spec_from_file_location("cli_reference", DOCS / "cli_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _slug(heading: str) -> str:
    """Python-Markdown's toc slug (what mkdocs makes an anchor of)."""
    text = re.sub(r"`|\*\*", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(markdown: str) -> set[str]:
    without_code = re.sub(r"```.*?```", "", markdown, flags=re.DOTALL)
    return {_slug(match) for match in re.findall(r"^#{1,6} (.+)$", without_code, re.MULTILINE)}


def _pages() -> dict[Path, str]:
    """Every page of the site: the committed ones and the generated command reference."""
    pages = {path: path.read_text(encoding="utf-8") for path in DOCS.rglob("*.md")}
    pages.update({DOCS / uri: text for uri, (_, text, _) in _hook().pages().items()})
    return pages


def test_every_link_to_a_page_resolves_from_the_readme_and_the_docs():
    pages = _pages()
    sources = {ROOT / "README.md": (ROOT / "README.md").read_text(encoding="utf-8"), **pages}
    checked, broken = 0, []
    for source, text in sources.items():
        for target in LINK.findall(re.sub(r"```.*?```", "", text, flags=re.DOTALL)):
            if re.match(r"[a-z]+:", target):
                continue  # an external URL
            path, _, anchor = target.partition("#")
            resolved = (source.parent / path).resolve() if path else source
            if resolved.suffix == ".md" and resolved.is_relative_to(DOCS):
                checked += 1
                if resolved not in pages:
                    broken.append(f"{source.relative_to(ROOT)}: {target}: no such page")
                elif anchor and anchor not in _anchors(pages[resolved]):
                    broken.append(f"{source.relative_to(ROOT)}: {target}: no such heading")
            elif not resolved.exists():
                broken.append(f"{source.relative_to(ROOT)}: {target}: no such file")
    assert broken == []
    assert checked >= 40


def test_every_committed_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))

    def uris(item):
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for value in item.values():
                yield from uris(value)
        elif isinstance(item, list):
            for value in item:
                yield from uris(value)

    listed = set(uris(config["nav"]))
    committed = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    assert sorted(committed - listed) == [] and sorted(listed - committed) == []
    assert config["hooks"] == ["docs/cli_reference.py", "docs/hooks/format_table.py"]


def test_the_reference_has_a_page_per_command_with_every_option():
    pages = _hook().pages()
    expected = {}

    def visit(command: click.Command, path: tuple[str, ...]):
        expected[path] = command
        for name, sub in getattr(command, "commands", {}).items():
            if not sub.hidden:
                visit(sub, (*path, name))

    visit(main, ())
    assert sorted(pages) == sorted(f"reference/{'-'.join(path) or 'inject'}.md" for path in expected)
    for path, command in expected.items():
        title, text, _ = pages[f"reference/{'-'.join(path) or 'inject'}.md"]
        assert title == " ".join(("inject", *path))
        options = [opt for param in command.params if isinstance(param, click.Option) and not param.hidden
                   for opt in param.opts]
        missing = [opt for opt in options if f"`{opt}" not in text and f", {opt}" not in text]
        assert missing == [], f"{title}: {missing}"
        if command.epilog:
            assert "```bash" in text, f"{title}: its examples are not shown"


def test_the_reference_says_what_help_says():
    # Each option's help line appears in the page as --help prints it (defaults and choices included).
    pages = _hook().pages()
    title, text, _ = pages["reference/run.md"]
    help_text = CliRunner().invoke(main, ["run", "--help"], terminal_width=10_000).output
    for line in help_text.splitlines():
        match = re.match(r"\s+(--[\w-]+)[^\n]*?\s{2,}(\S.*)$", line)
        if match:
            assert " ".join(match.group(2).split()).replace("*", "\\*").replace("<", "&lt;").replace(">", "&gt;") \
                in text, line


INTERNAL = re.compile(r"\bissues? [0-9]+\b|\bissue-[0-9]+\b|#[0-9]{2}\b|\bat [0-9a-f]{7}\b|\bthis session\b",
                      re.IGNORECASE)


def test_no_internal_references_in_user_facing_text():
    files = [ROOT / "README.md", ROOT / "SECURITY.md", ROOT / "mkdocs.yml", *DOCS.rglob("*.md"),
             *(ROOT / "prompts").rglob("*.j2"), *(ROOT / "injector").rglob("*.py")]
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in files
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if INTERNAL.search(line)]
    found += [f"{uri}: {line}" for uri, (_, text, _) in _hook().pages().items()
              for line in text.splitlines() if INTERNAL.search(line)]
    assert found == []
