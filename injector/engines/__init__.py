"""Engines: what answers a unit's messages (`base.Engine`); `EngineSettings` and the registry of engine kinds
(`registry.py`) that builds one (`engine_from_settings`, `from_model`).

Names are imported on first use (PEP 562): `inject run --help` lists the registry's kind names without importing
any engine, pydantic or the taxonomy.
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from injector.model.choices import OFFLINE_MODEL  # defined there for --help

if TYPE_CHECKING:
    from injector.engines.base import Engine
    from injector.engines.batch import BatchEngine
    from injector.engines.llm import LLMEngine
    from injector.engines.offline import OfflineEngine
    from injector.engines.registry import EngineKind, engine_from_settings
    from injector.engines.router import RouterEngine
    from injector.engines.settings import BatchSettings, EngineSettings, SettingsConflict

_HOME = {"Engine": "injector.engines.base", "BatchEngine": "injector.engines.batch", "LLMEngine": "injector.engines.llm",
         "OfflineEngine": "injector.engines.offline", "EngineKind": "injector.engines.registry",
         "engine_from_settings": "injector.engines.registry", "RouterEngine": "injector.engines.router",
         "BatchSettings": "injector.engines.settings", "EngineSettings": "injector.engines.settings",
         "SettingsConflict": "injector.engines.settings"}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'injector.engines' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def from_model(model: str | None, *, api_base: str | list[str] | tuple[str, ...] | None = None,
               deployments: str | Path | None = None, use_cache: bool = True, **settings: Any) -> Engine:
    """The engine for `model` (a registered engine name such as "offline", or a litellm model string) with these
    settings: `EngineSettings` (its `api_bases` given here as `api_base`), built by `engine_from_settings`."""
    from injector.engines.registry import engine_from_settings
    from injector.engines.settings import settings_from

    return engine_from_settings(settings_from(model=model, api_bases=api_base, deployments=deployments,
                                              use_cache=use_cache, **settings))


__all__ = ["OFFLINE_MODEL", "BatchEngine", "BatchSettings", "Engine", "EngineKind", "EngineSettings", "LLMEngine",
           "OfflineEngine", "RouterEngine", "SettingsConflict", "engine_from_settings", "from_model"]
