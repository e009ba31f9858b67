"""The manual's Layout page (docs/layout.md) names every module and package of injector/ (so it keeps matching the
tree)."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _layout() -> str:
    return (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")


def test_the_layout_section_names_every_module_and_package():
    layout = _layout()
    package = ROOT / "injector"
    # offline/'s operators and the record formats (sources/formats/, listed in docs/formats.md) are not named one
    # by one: a new format is one new file, nothing else
    names = [f"`{path.name}`" for path in package.rglob("*.py")
             if path.name != "__init__.py" and "offline" not in path.parts and path.parent.name != "formats"]
    names += [f"`{path.name}/`" for path in package.rglob("*") if (path / "__init__.py").is_file()]
    missing = sorted(name for name in names if name not in layout)
    assert missing == []
