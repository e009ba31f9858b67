"""The input record formats, registered in one place: this registry.

A format is a `RecordFormat`: its name, a one-line description, `detect` (does a raw record look like it?),
`read` (the record as a `Trajectory`, or the reason a valid record is skipped) and the loader options it takes.
The bundled ones are the modules of `injector/sources/formats/`, one per format, each declaring `FORMAT`; a module
added there is a format, under its file name. Other packages add formats through the entry-point group
`prm_injector.formats` (see docs/extending.md).

Listing the names (`format_names()`, what `--input-format` offers) imports no reader: bundled names are file names
and plugin names come from installed metadata, so `inject --help` stays fast. `get_format(name)` imports the one
module it needs; `detect_format` imports them all.
"""
from __future__ import annotations

import functools
import importlib
import logging
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping

from injector.util.errors import UserError
from injector.util.plugins import entry_point_names, load_entry_points

if TYPE_CHECKING:
    from injector.model.trajectory import Trajectory

ENTRY_POINT_GROUP = "prm_injector.formats"
LOADER_OPTIONS = ("strict", "fields")
"""The loader options a format may take (`RecordFormat.options`); giving one to a format that does not take it is
refused. Every format gets `ReadOptions.image_base`."""
_BUNDLED_PACKAGE = "injector.sources.formats"
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
log = logging.getLogger("injector")


@dataclass(frozen=True)
class ReadOptions:
    """What the loader passes every reader, beside the record."""

    strict: bool = False
    """PRM800K-style selection: also require every chosen step to be rated correct (formats taking "strict")."""
    fields: Mapping[str, str] | None = None
    """Target -> dotted source field, for formats taking "fields" (`--field TARGET=SOURCE`)."""
    image_base: Path | None = None
    """Local images must lie under this directory (None: no local images are allowed)."""


Reader = Callable[[dict, str, str, ReadOptions], "Trajectory | str"]
"""`read(record, origin, where, options)`: `origin` is `<stem>:<line>`, for default ids; `where` the file the record
came from (relative image paths resolve against its directory). Returns the Trajectory, or the reason a valid
record is skipped (e.g. "not_all_correct", counted in the run's manifest); raises `BadRecord` when it is malformed."""


@dataclass(frozen=True)
class RecordFormat:
    """One input record format."""

    name: str
    """What `--input-format` takes: lower case letters, digits, `_` and `-`."""
    description: str
    """One line, for the formats table in the docs."""
    detect: Callable[[dict], bool]
    """Whether a raw record (a JSON object) looks like this format; must not raise on any dict."""
    read: Reader
    options: tuple[str, ...] = ()
    """Which of `LOADER_OPTIONS` this format takes."""
    catch_all: bool = False
    """Detected only after every other format (a generic shape other formats' records could also have)."""

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"format name {self.name!r}: use lower case letters, digits, '_' and '-'")
        if not self.description.strip() or "\n" in self.description:
            raise ValueError(f"format {self.name!r}: the description must be one non-empty line")
        unknown = sorted(set(self.options) - set(LOADER_OPTIONS))
        if unknown:
            raise ValueError(f"format {self.name!r}: unknown options {unknown}; choose from {list(LOADER_OPTIONS)}")


@functools.cache
def bundled_format_names() -> tuple[str, ...]:
    """The formats that ship with the toolkit, sorted (the module names of `injector/sources/formats/`)."""
    package = importlib.import_module(_BUNDLED_PACKAGE)
    return tuple(sorted(info.name for info in pkgutil.iter_modules(package.__path__)
                        if not info.name.startswith("_") and not info.ispkg))


@functools.cache
def format_names() -> tuple[str, ...]:
    """Every format's name: the bundled ones, then those of installed plugins (neither is imported)."""
    bundled = bundled_format_names()
    return bundled + tuple(name for name in entry_point_names(ENTRY_POINT_GROUP) if name not in bundled)


def get_format(name: str) -> RecordFormat:
    """The format called `name`; a `UserError` naming the choices when there is none."""
    if name in bundled_format_names():
        return _bundled(name)
    plugins = _plugins()
    if name in plugins:
        return plugins[name]
    names = format_names()
    if name in names:  # listed by an installed plugin that did not load (its warning says why)
        raise UserError(f"input format {name!r} comes from a plugin that cannot be loaded (see the warning above); "
                        "fix or uninstall that plugin, or choose another format")
    import difflib  # only for this message

    close = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise UserError(f"unknown input format {name!r}{hint}; choose one of: {', '.join(names)}")


def formats() -> list[RecordFormat]:
    """Every format that loads, in the order `detect_format` tries them (catch-all shapes last)."""
    loaded = [_bundled(name) for name in bundled_format_names()] + list(_plugins().values())
    return sorted(loaded, key=lambda record_format: record_format.catch_all)  # stable: names stay sorted


def detect_format(record: object) -> str | None:
    """The name of the format a raw record looks like, or None."""
    if not isinstance(record, dict):
        return None
    for record_format in formats():
        if record_format.detect(record):
            return record_format.name
    return None


@functools.cache
def _bundled(name: str) -> RecordFormat:
    module = importlib.import_module(f"{_BUNDLED_PACKAGE}.{name}")
    declared = getattr(module, "FORMAT", None)
    if not isinstance(declared, RecordFormat) or declared.name != name:
        # A packaging mistake of ours, caught by tests/test_sources.py, not something a user can fix.
        raise RuntimeError(f"{module.__name__} must declare FORMAT = RecordFormat(name={name!r}, ...)")
    return declared


@functools.cache
def _plugins() -> dict[str, RecordFormat]:
    """The formats of installed plugins, by name; one that clashes with a bundled name or declares another name
    than its entry point is skipped with a warning."""
    loaded = load_entry_points(ENTRY_POINT_GROUP, expect=RecordFormat, taken=bundled_format_names())
    plugins: dict[str, RecordFormat] = {}
    for name, declared in loaded.items():
        assert isinstance(declared, RecordFormat)  # load_entry_points checked it
        if declared.name != name:
            log.warning(f"plugin {name!r} ({ENTRY_POINT_GROUP}): its RecordFormat is named {declared.name!r}; "
                        "the entry point and the format must have the same name; skipped")
            continue
        plugins[name] = declared
    return plugins
