"""The engine registry: every kind of engine the toolkit can build, registered in one place (`KINDS`), and
`engine_from_settings`, which picks one.

The rule that splits the model namespace: a `model` equal to a *named* kind's name (`offline`, `repeat-step`, a
plugin's) selects that kind; any other model string is a litellm (or OpenAI-compatible) model string, sent by the
`llm` kind, or by `router` (several servers) or `batch` (a provider's batch API) when the settings ask for them.
A named kind sends no requests, so it takes no servers and no batch.

Third-party engines register through the entry-point group `prm_injector.engines`: each entry point names an
`EngineKind`. Factories are "module:attribute" strings, imported only when the kind is
built, so listing the kinds (`inject run --help`) imports no engine.
"""
from __future__ import annotations

import functools
import importlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from injector.model.choices import OFFLINE_MODEL
from injector.engines.settings import EngineSettings, SettingsConflict

if TYPE_CHECKING:
    from injector.engines.base import Engine

ENTRY_POINT_GROUP = "prm_injector.engines"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class EngineKind:
    """One kind of engine: its name, what it needs, and the factory that builds it from `EngineSettings`.

    `named`: `--model NAME` selects it (and it takes no servers); otherwise `wants` says which settings select it
    for a litellm model string. `factory` is a callable or a "module:attribute" string (imported when first built).
    """

    name: str
    summary: str
    factory: str | Callable[[EngineSettings], Engine]
    named: bool = True
    wants: Callable[[EngineSettings], bool] | None = None

    def matches(self, settings: EngineSettings) -> bool:
        """Whether these settings select this kind (named kinds by their name only)."""
        if self.named:
            return settings.model == self.name or (self.name == OFFLINE_MODEL and _offline_default(settings))
        return self.wants is not None and self.wants(settings)

    def build(self, settings: EngineSettings) -> Engine:
        if self.named and (settings.batch is not None or settings.api_bases or settings.deployments is not None):
            raise SettingsConflict(_named_kind_refusal(self.name, settings))
        factory = self.factory
        if isinstance(factory, str):
            module, _, attribute = factory.partition(":")
            factory = functools.reduce(getattr, attribute.split("."), importlib.import_module(module))
        return factory(settings)  # type: ignore[operator]


def _offline_default(settings: EngineSettings) -> bool:
    """No model and no server named: the offline engine."""
    return settings.model is None and not settings.several_servers and settings.batch is None


def _named_kind_refusal(name: str, settings: EngineSettings) -> str:
    if settings.batch is not None:
        return ("`batch` sends through one provider's batch API: give `model` with an LLM and at most one "
                "`api_base` (no `deployments`)")
    return f"the {name} engine sends no requests: servers (`api_base`, `deployments`) need `model` with an LLM"


BUILTIN_KINDS: tuple[EngineKind, ...] = (
    EngineKind(OFFLINE_MODEL, "rule-based, no LLM (the default)", "injector.engines.offline.engine:from_settings"),
    EngineKind("repeat-step", "the original with one step repeated (a worked example of a new engine)",
               "injector.engines.repeat_step:from_settings"),
    EngineKind("batch", "a provider's batch API (`batch`)", "injector.engines.batch:from_settings", named=False,
               wants=lambda settings: settings.batch is not None),
    EngineKind("router", "several servers through a litellm Router (`deployments`, several `api_base`)",
               "injector.engines.router:from_settings", named=False,
               wants=lambda settings: settings.several_servers),
    EngineKind("llm", "any litellm model string (gpt-4o, anthropic/..., openai/NAME)",
               "injector.engines.llm:from_settings", named=False, wants=lambda settings: settings.model is not None),
)
"""The toolkit's own kinds, in the order they are tried: named kinds first, the litellm kinds after."""


@functools.lru_cache(maxsize=1)
def kinds() -> tuple[EngineKind, ...]:
    """Every registered kind: the built-in ones, then the plugins' (a plugin cannot replace a built-in name)."""
    from injector.util.plugins import load_entry_points

    found = list(BUILTIN_KINDS)
    taken = {kind.name for kind in found}
    for name, kind in load_entry_points(ENTRY_POINT_GROUP, expect=EngineKind).items():
        assert isinstance(kind, EngineKind)
        if not kind.named:
            log.warning("engine plugin %r is not a named kind (its `model` name selects it); ignored", name)
        elif kind.name in taken:
            log.warning("engine plugin %r reuses the engine name %r; ignored", name, kind.name)
        else:
            taken.add(kind.name)
            found.insert(sum(k.named for k in found), kind)  # after the named kinds, before the litellm ones
    return tuple(found)


def named_kinds() -> list[str]:
    """The names `--model` takes as engines (everything else is a litellm model string)."""
    return [kind.name for kind in kinds() if kind.named]


def kind_for(settings: EngineSettings) -> EngineKind:
    """The kind these settings select."""
    for kind in kinds():
        if kind.matches(settings):
            return kind
    raise SettingsConflict("several servers need `model`, e.g. `model=openai/qwen`")  # unreachable by validation


def engine_from_settings(settings: EngineSettings) -> Engine:
    """The engine these settings describe."""
    return kind_for(settings).build(settings)
