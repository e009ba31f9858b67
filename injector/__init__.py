"""prm-injector: synthesize process-level error benchmarks from fully correct step-by-step solutions.

Public API (the `inject` CLI uses nothing else):

    from injector import Taxonomy, load_trajectories, LLMEngine, run
"""
from __future__ import annotations

from .contract import AnswerError, FullAnswer, MultiSolutionAnswer, parse_answer  # noqa: E402
from .engines.base import Engine, Proposal  # noqa: E402
from .engines.llm import LLMEngine  # noqa: E402
from .engines.offline import OfflineEngine  # noqa: E402
from .codes import ReasonCode  # noqa: E402
from .errors import BudgetExceeded, InjectorError, InputError, UserError  # noqa: E402
from .unit import inject_one  # noqa: E402
from .pipeline import DryRunReport, RunProgress, RunResult, RunSpec, dry_run, run, split_by_support  # noqa: E402
from .prompts import render_messages  # noqa: E402
from .records import Candidate, Rejection, RunManifest  # noqa: E402
from .sources import IterableInput, TrajectoryInput, TrajectorySource, load_trajectories  # noqa: E402
from .taxonomy import Category, Rules, Taxonomy  # noqa: E402
from .trajectory import Trajectory  # noqa: E402
from .validate import Verdict, validate_answer  # noqa: E402
from .version import __version__  # noqa: E402

__all__ = [
    "__version__", "AnswerError", "BudgetExceeded", "DryRunReport", "RunProgress", "Candidate", "Category", "Engine", "FullAnswer", "InjectorError", "InputError",
    "LLMEngine", "MultiSolutionAnswer", "OfflineEngine", "Proposal", "Rejection", "Rules", "RunManifest", "RunResult", "Taxonomy",
    "Trajectory", "TrajectorySource", "UserError", "Verdict", "dry_run", "inject_one", "load_trajectories", "parse_answer",
    "render_messages", "run", "split_by_support", "validate_answer",
    "IterableInput", "ReasonCode", "RunSpec", "TrajectoryInput",
]
