"""Where the bundled taxonomy, prompts and sample data live (a source checkout or an installed wheel)."""
from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # injector/


def bundled_root() -> Path:
    """The directory holding `taxonomy.yaml`, `prompts/` and `data/`.

    In a checkout (or an editable install) that is the repository root; a wheel carries them as
    `injector/bundled/` (see pyproject.toml).
    """
    for root in (_PACKAGE_DIR.parent, _PACKAGE_DIR / "bundled"):
        if (root / "taxonomy.yaml").is_file() and (root / "prompts").is_dir():
            return root
    raise FileNotFoundError(f"bundled taxonomy not found beside {_PACKAGE_DIR}; reinstall prm-injector")


def bundled_taxonomies() -> dict[str, Path]:
    """Bundled taxonomies by name: `prmbench` is the top-level taxonomy.yaml, others are taxonomies/<name>/."""
    root = bundled_root()
    named = {"prmbench": root / "taxonomy.yaml"}
    named.update({path.parent.name: path for path in sorted((root / "taxonomies").glob("*/taxonomy.yaml"))})
    return named


def bundled_prompts_dir() -> Path:
    """The bundled templates, among them `_base.j2`, which custom templates may extend."""
    return bundled_root() / "prompts"


def bundled_data_path() -> Path:
    return bundled_root() / "data" / "sample.jsonl"
