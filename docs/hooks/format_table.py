"""The table of the bundled input record formats, made from the format registry (`injector/sources/registry.py`)
when the docs are built, so that a new format needs no edit here or in docs/formats.md.

As an mkdocs hook (`hooks: [docs/hooks/format_table.py]` in mkdocs.yml) it replaces the marker line of a page with
the table; as a script it prints the table:

    python docs/hooks/format_table.py
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from injector.sources.registry import LOADER_OPTIONS, bundled_format_names, get_format  # noqa: E402

MARKER = "<!-- the table of record formats, made from the registry when the docs are built -->"
OPTION_FLAGS = {"strict": "`--strict`", "fields": "`--field`"}


def table() -> str:
    """One row per bundled format, in the order detection tries them."""
    missing = set(LOADER_OPTIONS) - set(OPTION_FLAGS)
    if missing:
        raise RuntimeError(f"name the command-line flag of the loader options {sorted(missing)}")
    bundled = sorted((get_format(name) for name in bundled_format_names()), key=lambda found: found.catch_all)
    rows = ["| format | what it reads | options | module |", "|---|---|---|---|"]
    for found in bundled:
        options = ", ".join(OPTION_FLAGS[option] for option in found.options) or "-"
        rows.append(f"| `{found.name}` | {found.description} | {options} | "
                    f"`injector/sources/formats/{found.name}.py` |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    """mkdocs hook: the page with the marker line replaced by the table."""
    return markdown.replace(MARKER, table()) if MARKER in markdown else markdown


if __name__ == "__main__":
    print(table(), end="")
