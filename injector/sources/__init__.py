"""Sources: where trajectories come from. `streams.py` reads files and datasets record by record
(`load_trajectories`); `registry.py` holds the record formats, one module each in `formats/`; `reading.py` what
their readers share.

Each name below is imported on first use (PEP 562): the registry's names (for `inject --help`) load without the
streams and the readers.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from injector.sources.reading import BadRecord
    from injector.sources.registry import ReadOptions, RecordFormat, detect_format, format_names, get_format
    from injector.sources.streams import (DUPLICATE_ID_POLICIES, IterableInput, SourceStats, TrajectoryInput,
                                          TrajectorySource, as_input, load_trajectories)

_MODULES = {
    "injector.sources.reading": ("BadRecord",),
    "injector.sources.registry": ("ReadOptions", "RecordFormat", "detect_format", "format_names", "get_format"),
    "injector.sources.streams": ("DUPLICATE_ID_POLICIES", "IterableInput", "SourceStats", "TrajectoryInput",
                                 "TrajectorySource", "as_input", "load_trajectories"),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'injector.sources' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value
