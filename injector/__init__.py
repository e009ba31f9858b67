"""prm-injector: synthesize process-level error benchmarks from fully correct step-by-step solutions.

Public API (the `inject` CLI uses nothing else):

    from injector import Taxonomy, load_trajectories, LLMEngine, run

Each name is imported on first use (PEP 562), so `inject --help` and the modules that need only a part of the
library do not load all of it.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from injector.util.version import __version__

if TYPE_CHECKING:
    from injector.model.codes import ReasonCode
    from injector.answer.contract import AnswerError, FullAnswer, MultiSolutionAnswer, parse_answer
    from injector.engines.base import Engine, Proposal
    from injector.engines.llm import LLMEngine
    from injector.engines.offline import OfflineEngine
    from injector.util.errors import BudgetExceeded, InjectorError, InputError, UserError
    from injector.runner.loop import DryRunReport, RunProgress, RunResult, RunSpec, dry_run, run, split_by_support
    from injector.inject.prompts import render_messages
    from injector.records.models import Candidate, Rejection, RunManifest
    from injector.sources import IterableInput, TrajectoryInput, TrajectorySource, load_trajectories
    from injector.taxonomy import Category, Rules, Taxonomy
    from injector.model.trajectory import Trajectory
    from injector.inject.unit import inject_one
    from injector.inject.validation import Verdict, validate_answer

_MODULES = {
    ".answer.contract": ("AnswerError", "FullAnswer", "MultiSolutionAnswer", "parse_answer"),
    ".engines.base": ("Engine", "Proposal"),
    ".engines.llm": ("LLMEngine",),
    ".engines.offline": ("OfflineEngine",),
    ".model.codes": ("ReasonCode",),
    ".util.errors": ("BudgetExceeded", "InjectorError", "InputError", "UserError"),
    ".inject.unit": ("inject_one",),
    ".runner.loop": ("DryRunReport", "RunProgress", "RunResult", "RunSpec", "dry_run", "run", "split_by_support"),
    ".inject.prompts": ("render_messages",),
    ".records.models": ("Candidate", "Rejection", "RunManifest"),
    ".sources": ("IterableInput", "TrajectoryInput", "TrajectorySource", "load_trajectories"),
    ".taxonomy": ("Category", "Rules", "Taxonomy"),
    ".model.trajectory": ("Trajectory",),
    ".inject.validation": ("Verdict", "validate_answer"),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}

__all__ = [
    "__version__", "AnswerError", "BudgetExceeded", "DryRunReport", "RunProgress", "Candidate", "Category", "Engine", "FullAnswer", "InjectorError", "InputError",
    "LLMEngine", "MultiSolutionAnswer", "OfflineEngine", "Proposal", "Rejection", "Rules", "RunManifest", "RunResult", "Taxonomy",
    "Trajectory", "TrajectorySource", "UserError", "Verdict", "dry_run", "inject_one", "load_trajectories", "parse_answer",
    "render_messages", "run", "split_by_support", "validate_answer",
    "IterableInput", "ReasonCode", "RunSpec", "TrajectoryInput",
]


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'injector' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
