"""prm-injector: synthesize process-level error benchmarks from fully correct step-by-step solutions.

Public API (the `inject` CLI uses nothing else):

    from injector import Taxonomy, load_trajectories, LLMEngine, run

Each name is imported on first use (PEP 562), so `inject --help` and the modules that need only a part of the
library do not load all of it.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__

if TYPE_CHECKING:
    from .codes import ReasonCode
    from .contract import AnswerError, FullAnswer, MultiSolutionAnswer, parse_answer
    from .engines.base import Engine, Proposal
    from .engines.llm import LLMEngine
    from .engines.offline import OfflineEngine
    from .errors import BudgetExceeded, InjectorError, InputError, UserError
    from .pipeline import DryRunReport, RunProgress, RunResult, RunSpec, dry_run, run, split_by_support
    from .prompts import render_messages
    from .records import Candidate, Rejection, RunManifest
    from .sources import IterableInput, TrajectoryInput, TrajectorySource, load_trajectories
    from .taxonomy import Category, Rules, Taxonomy
    from .trajectory import Trajectory
    from .unit import inject_one
    from .validate import Verdict, validate_answer

_MODULES = {
    ".contract": ("AnswerError", "FullAnswer", "MultiSolutionAnswer", "parse_answer"),
    ".engines.base": ("Engine", "Proposal"),
    ".engines.llm": ("LLMEngine",),
    ".engines.offline": ("OfflineEngine",),
    ".codes": ("ReasonCode",),
    ".errors": ("BudgetExceeded", "InjectorError", "InputError", "UserError"),
    ".unit": ("inject_one",),
    ".pipeline": ("DryRunReport", "RunProgress", "RunResult", "RunSpec", "dry_run", "run", "split_by_support"),
    ".prompts": ("render_messages",),
    ".records": ("Candidate", "Rejection", "RunManifest"),
    ".sources": ("IterableInput", "TrajectoryInput", "TrajectorySource", "load_trajectories"),
    ".taxonomy": ("Category", "Rules", "Taxonomy"),
    ".trajectory": ("Trajectory",),
    ".validate": ("Verdict", "validate_answer"),
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
