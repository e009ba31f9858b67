"""docs/extending.md shows real code: its titled code blocks, joined in order, are the files they name, and its
example record and plugin registration work with the shipped code. Also the formats table of the docs, made from
the registry by docs/hooks/format_table.py."""
from __future__ import annotations

import importlib.util
import json
import re
import tomllib
from pathlib import Path

from injector.sources import get_format
from injector.sources.registry import ENTRY_POINT_GROUP, bundled_format_names

ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r'^```(\w+)(?: title="([^"]+)")?\n(.*?)^```$', re.MULTILINE | re.DOTALL)


def section(heading: str, page: str = "extending.md") -> str:
    """The text of a `## heading` section of a docs page, up to the next `## ` heading."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end != -1 else len(text)]


def titled_files(text: str) -> dict[str, str]:
    """Path -> its code blocks (```lang title="PATH"), joined in order with the two blank lines between top-level
    definitions."""
    parts: dict[str, list[str]] = {}
    for _lang, title, body in FENCE.findall(text):
        if title:
            parts.setdefault(title, []).append(body)
    return {path: "\n\n".join(bodies) for path, bodies in parts.items()}


def blocks(text: str, lang: str) -> list[str]:
    return [body for found, _title, body in FENCE.findall(text) if found == lang]


def test_the_new_format_walk_through_is_the_shipped_file_and_its_test():
    shown = titled_files(section("A new record format"))
    assert set(shown) == {"injector/sources/formats/processbench.py", "tests/test_processbench_format.py"}
    for path, code in shown.items():
        assert code == (ROOT / path).read_text(encoding="utf-8"), f"docs/extending.md shows another {path}"


def test_the_walk_through_s_example_record_is_read_by_the_format():
    [example] = blocks(section("A new record format"), "json")
    trajectory = get_format("processbench").read(json.loads(example), "example:1", "", _options())
    assert trajectory.id == "gsm8k-0" and trajectory.answer == "5" and len(trajectory.steps) == 2


def test_the_plugin_registration_names_the_group_and_a_free_name():
    [registration] = blocks(section("A new record format"), "toml")
    points = tomllib.loads(registration)["project"]["entry-points"][ENTRY_POINT_GROUP]
    [(name, value)] = points.items()
    assert name not in bundled_format_names() and re.fullmatch(r"[\w.]+:FORMAT", value)


def test_the_formats_page_gets_one_row_per_bundled_format():
    spec = importlib.util.spec_from_file_location("format_table", ROOT / "docs" / "hooks" / "format_table.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    assert page.count(hook.MARKER) == 1
    built = hook.on_page_markdown(page, page=None, config=None, files=None)
    rows = [line for line in built.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == sorted(bundled_format_names(), key=_catch_all_last)
    for row, name in zip(rows, sorted(bundled_format_names(), key=_catch_all_last)):
        assert get_format(name).description in row


def _catch_all_last(name: str) -> tuple[bool, str]:
    return get_format(name).catch_all, name


def _options():
    from injector.sources import ReadOptions

    return ReadOptions()
