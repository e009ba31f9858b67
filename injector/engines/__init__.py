"""Engines: what answers a unit's messages (`base.Engine`); `EngineSettings` and the registry of engine kinds
(`registry.py`) that builds one (`engine_from_settings`, `from_model`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from injector.model.choices import OFFLINE_MODEL  # defined there for --help
from injector.engines.base import Engine
from injector.engines.llm import LLMEngine
from injector.engines.batch import BatchEngine
from injector.engines.offline import OfflineEngine
from injector.engines.registry import EngineKind, engine_from_settings
from injector.engines.router import RouterEngine
from injector.engines.settings import BatchSettings, EngineSettings, SettingsConflict, settings_from


def from_model(model: str | None, *, api_base: str | list[str] | tuple[str, ...] | None = None,
               deployments: str | Path | None = None, use_cache: bool = True, **settings: Any) -> Engine:
    """The engine for `model` (a registered engine name such as "offline", or a litellm model string) with these
    settings: `EngineSettings` (its `api_bases` given here as `api_base`), built by `engine_from_settings`."""
    return engine_from_settings(settings_from(model=model, api_bases=api_base, deployments=deployments,
                                              use_cache=use_cache, **settings))


__all__ = ["OFFLINE_MODEL", "BatchEngine", "BatchSettings", "Engine", "EngineKind", "EngineSettings", "LLMEngine",
           "OfflineEngine", "RouterEngine", "SettingsConflict", "engine_from_settings", "from_model"]
