"""The README's Layout section names every module and package of injector/ (so it keeps matching the tree)."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _layout() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Layout\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_the_layout_section_names_every_module_and_package():
    layout = _layout()
    package = ROOT / "injector"
    names = [f"`{path.name}`" for path in package.glob("*.py") if path.name != "__init__.py"]
    names += [f"`{path.name}/`" for path in package.iterdir() if (path / "__init__.py").is_file()]
    names += [f"`{path.name}`" for sub in ("sources", "taxonomy") for path in (package / sub).glob("*.py")
              if path.name != "__init__.py"]
    names += [f"`{path.name}`" for path in (package / "engines").glob("*.py") if path.name != "__init__.py"]
    missing = sorted(name for name in names if name not in layout)
    assert missing == []
