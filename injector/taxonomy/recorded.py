"""The taxonomy a run directory recorded: `run_taxonomy`, which never runs code a received run names."""
from __future__ import annotations

from pathlib import Path

from injector.taxonomy.models import Taxonomy
from injector.util.errors import UserError
from injector.util.json_bounds import loads_bounded
from injector.util.resources import bundled_taxonomies
from injector.util.safe_files import MAX_MANIFEST_BYTES, NotARegularFile, read_text


def _real_file(path: Path | None) -> Path | None:
    """The real path of `path` if it is a readable regular file, else None (a manifest may name anything)."""
    try:
        real = path.resolve() if path is not None else None
        return real if real is not None and real.is_file() else None
    except (OSError, RuntimeError, ValueError):  # a name too long, a symlink loop, a NUL byte
        return None


def run_taxonomy(run_dir: str | Path, override: str | Path | None = None) -> tuple[Taxonomy, str]:
    """The taxonomy to check a run directory's candidates with, and a note for the user ("" when none is due).

    `override` (`--taxonomy NAME|PATH`) is what the user named: loaded in full, hooks included. Otherwise the run's
    `manifest.json` decides, and nothing in it runs code: a bundled taxonomy is used as bundled; another one is read
    for its rules only (hooks off), its path resolved against the run directory, never the current directory; a
    run that names none, or one that cannot be read, gets the bundled taxonomy and a note saying so.
    """
    if override is not None:
        return Taxonomy.load(override), ""
    run_dir = Path(run_dir)
    manifest_path = run_dir / "manifest.json"
    try:  # through safe_files: a received manifest.json may be a link, a FIFO or /dev/zero
        config = loads_bounded(read_text(manifest_path, MAX_MANIFEST_BYTES))["config"]
        name, recorded = config.get("taxonomy"), config.get("taxonomy_path")
    except NotARegularFile as exc:
        return Taxonomy.load(), f"{exc}; using the bundled taxonomy"
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Taxonomy.load(), f"{manifest_path} names no taxonomy: using the bundled one"
    bundled = bundled_taxonomies()
    path = run_dir / recorded if isinstance(recorded, str) and recorded else None  # an absolute one stays as is
    real = _real_file(path)
    if real is not None:
        for bundled_name, bundled_path in bundled.items():
            if real == bundled_path.resolve():
                return Taxonomy.load(bundled_name), ""
    elif isinstance(name, str) and name in bundled:
        # A bundled taxonomy on the machine that made the run (its path does not exist here).
        return Taxonomy.load(name), ""
    if real is None:
        return Taxonomy.load(), (f"the run's taxonomy {recorded!r} (from {manifest_path}) is not here: using the "
                                 "bundled one; pass --taxonomy PATH to check with the run's own")
    try:
        taxonomy = Taxonomy.load(real, rules_only=True)
    except (UserError, OSError, UnicodeDecodeError) as exc:  # someone else's file: any problem is a note
        return Taxonomy.load(), f"the run's taxonomy could not be loaded ({exc}): using the bundled one"
    if not taxonomy.skipped_hooks:
        return taxonomy, ""
    return taxonomy, (f"{real}: hook checks of {', '.join(taxonomy.skipped_hooks)} were skipped: a taxonomy found "
                      f"in a run directory is read for its rules only and never runs code; to run its hooks, review "
                      f"its Python and pass --taxonomy {real}")
