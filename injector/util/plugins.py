"""Plugins: objects that other installed distributions offer through a Python entry-point group.

A third-party package registers an object in its own `pyproject.toml`, e.g.

    [project.entry-points."prm_injector.formats"]
    demo = "prm_injector_demo_format:FORMAT"

and `load_entry_points("prm_injector.formats")` returns `{"demo": <that object>}`. A plugin that fails to load (it
raises on import, names a missing attribute, is not what the group expects, or takes a name already taken) is
skipped with one warning line on the `injector` logger naming the plugin and its distribution: a broken plugin
never stops the toolkit. `entry_point_names(group)` lists the names without importing any plugin (for `--help`).

Only installed distributions are consulted (the user chose to install them); nothing here imports what a data file
or a run directory names.
"""
from __future__ import annotations

import logging
from collections.abc import Collection
from importlib.metadata import EntryPoint, entry_points

log = logging.getLogger("injector")


def entry_point_names(group: str) -> tuple[str, ...]:
    """The names registered in `group`, sorted, without loading any of them."""
    return tuple(sorted({point.name for point in entry_points(group=group)}))


def load_entry_points(group: str, expect: type | tuple[type, ...] | None = None,
                      taken: Collection[str] = ()) -> dict[str, object]:
    """Entry-point name -> loaded object for every entry point of `group`, sorted by name.

    With `expect`, an object that is not an instance of it is skipped with a warning; so is a plugin whose name is
    in `taken` (the toolkit's own names: a plugin cannot replace them). When two distributions offer the same
    name, the first one found is kept and the other is reported.
    """
    loaded: dict[str, object] = {}
    for point in sorted(entry_points(group=group), key=lambda point: point.name):
        if point.name in taken:
            plugin_warning(group, point, "the toolkit has its own with this name; skipped")
            continue
        if point.name in loaded:
            plugin_warning(group, point, "another installed plugin already has this name; skipped")
            continue
        try:
            value = point.load()
        except Exception as exc:  # noqa: BLE001 - foreign code: whatever it raises is reported (a warning), skipped
            plugin_warning(group, point, f"cannot be loaded ({type(exc).__name__}: {exc}); skipped")
            continue
        if expect is not None and not isinstance(value, expect):
            names = " or ".join(kind.__name__ for kind in (expect if isinstance(expect, tuple) else (expect,)))
            plugin_warning(group, point, f"is a {type(value).__name__} where {names} was expected; skipped")
            continue
        loaded[point.name] = value
    return loaded


def plugin_warning(group: str, point: EntryPoint, problem: str) -> None:
    """Log one line, `plugin NAME (GROUP, from DIST VERSION = VALUE): PROBLEM`, for a plugin that is not used."""
    dist = getattr(point, "dist", None)
    origin = f"from {dist.name} {dist.version}, " if dist is not None else ""
    line = f"plugin {point.name!r} ({group}, {origin}{point.value}): {problem}"
    log.warning(" ".join(line.split()))  # one line, whatever the plugin's message holds
