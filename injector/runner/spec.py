"""What a run is: its `RunSpec`, the units it makes, its configuration (a run directory's identity), its live
`RunProgress`, and the `UnitExecutor` protocol the executors follow."""
from __future__ import annotations

import hashlib
import itertools
import json
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Collection, Iterable, Iterator, Protocol

from pydantic import BaseModel, ConfigDict, Field

from injector.answer.contract import DEFAULT_OUTPUT_MODE, OutputMode
from injector.engines.base import Engine
from injector.inject.unit import DEFAULT_MAX_ATTEMPTS, Unit
from injector.model.codes import ReasonCode
from injector.model.trajectory import Trajectory
from injector.records.directory import RunDirectory
from injector.records.models import Candidate, Rejection, RunManifest, Spending
from injector.sources import TrajectoryInput
from injector.taxonomy import Category, Taxonomy
from injector.util.errors import UserError


def default_run_dir() -> Path:
    return Path("runs") / datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


class RunSpec(BaseModel):
    """What a run makes and how: the one description `run`, `dry_run` and the run configuration read.

    `taxonomy`, `categories`, `samples`, `seed` and `output_mode` (with the engine's settings and the input's
    identity) are the run's configuration: a run directory continues only under the same ones. The rest says how
    much of it to do now and how: they may change between invocations of one run directory.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    taxonomy: Taxonomy
    categories: list[Category]
    """The categories to inject (`taxonomy.select([...])`); those the engine cannot make are skipped."""
    samples: int = Field(default=1, ge=1)
    """Candidates to ask for per (trajectory, category)."""
    seed: int = 0
    """Sample k of a unit is sent seed+k."""
    output_mode: OutputMode = DEFAULT_OUTPUT_MODE
    limit: int | None = Field(default=None, ge=1)
    """Use at most this many trajectories."""
    max_attempts: int = Field(default=DEFAULT_MAX_ATTEMPTS, ge=1)
    """Attempts per unit, for engines that take feedback."""
    retry_rejects: bool = False
    """Also redo units the run directory rejected (transient failures are always redone)."""
    out: Path | None = None
    """The run directory; None: `runs/<UTC date-time>`."""
    concurrency: int = Field(default=16, ge=1)
    """Units in flight."""
    max_cost: float | None = Field(default=None, ge=0)
    """Dollars the run directory may spend over all its invocations (the manifest keeps the total): a unit starts
    only while what is spent, what is in flight and the largest unit's cost so far stay within it; then
    `BudgetExceeded` (resumable with a higher cap)."""
    max_cost_per_invocation: float | None = Field(default=None, ge=0)
    """Dollars this invocation may spend; reaching it raises `BudgetExceeded` (the same command continues)."""
    log_prompts: bool = False
    """Append every request and its answer (or error) to `out/prompts.jsonl`, redacted (`runner.prompt_log`)."""
    spent_before: Spending = Field(default_factory=Spending)
    """What the run directory spent before this invocation: set by `run` from the manifest, not an option."""
    candidate_audit: Callable[[Candidate], Candidate] | None = None
    """Called on every candidate before it is written (`inject run`: the step audit, which records its flags on
    the candidate); a module-level function, so process and Ray workers receive it."""

    def invocation_budget(self) -> float | None:
        """Dollars this invocation may still spend: what `max_cost` leaves of the run's total, at most
        `max_cost_per_invocation`; None without a cap."""
        caps = [cap for cap in (self.run_budget_left(), self.max_cost_per_invocation) if cap is not None]
        return min(caps) if caps else None

    def run_budget_left(self) -> float | None:
        """What `max_cost` leaves of the run's total after the earlier invocations; None without it."""
        if self.max_cost is None:
            return None
        return max(0.0, self.max_cost - (self.spent_before.total or 0.0))

    def budget_message(self, spent_now: float | None) -> str:
        """Why `BudgetExceeded`: how much is spent (this invocation and in all) and how to go on."""
        now = spent_now or 0.0
        if self.max_cost is not None and self.invocation_budget() == self.run_budget_left():
            total = (self.spent_before.total or 0.0) + now
            return (f"{self.out} has spent ${total:.4f} of --max-cost ${self.max_cost:g} (${now:.4f} in this "
                    f"invocation), and the next unit could pass it; raise the cap to continue, e.g. the same "
                    f"command with --max-cost {max(2 * self.max_cost, 1.0):g}")
        if self.max_cost_per_invocation is None:  # a --workers process: the shared --max-cost ledger had no room
            return f"spent ${now:.4f}; the run's budget has no room for the next unit"
        return (f"spent ${now:.4f}, reaching --max-cost-per-invocation ${self.max_cost_per_invocation:g}; run the "
                "same command again to continue")

    def audited(self, record: Candidate | Rejection) -> Candidate | Rejection:
        """`record` as it is written: a candidate passed through `candidate_audit`, a reject as it is."""
        if self.candidate_audit is None or not isinstance(record, Candidate):
            return record
        return self.candidate_audit(record)

    def units(self, trajectories: Iterable[Trajectory], categories: list[Category]) -> Iterator[Unit]:
        """Every unit of `categories` (those of the spec the engine can make), in order, up to `limit`."""
        return iter_units(trajectories, categories, self.samples, self.limit)

    def finished_units(self, run_dir: RunDirectory) -> Collection[str]:
        """Ids of the units `run_dir` already holds that this invocation skips (see `RunDirectory.written`)."""
        if run_dir.read_manifest() is None:
            return frozenset()
        return run_dir.written().finished(self.retry_rejects)


@dataclass
class RunProgress:
    """Live counts of a run, passed to the `on_progress` callback after every unit."""

    planned: int | None = None
    """Units this invocation expects to do (an upper bound from the input size), when known."""
    done: int = 0
    accepted: int = 0
    rejected: int = 0
    skipped_existing: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    """Dollars spent by this invocation; None once any answer had no known price."""
    codes: dict[str, int] = field(default_factory=dict)
    by_category: dict[str, dict[str, int]] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)
    retries: Callable[[], int] = lambda: 0
    """Transient retries so far (read from the engine)."""
    transient_message: str | None = None
    """The latest transient failure's message: why the provider looks unreachable."""
    largest_unit_cost: float = 0.0
    """The most one unit of this invocation cost."""

    def rate(self) -> float:
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if elapsed > 0 else 0.0

    def eta_seconds(self) -> float | None:
        rate = self.rate()
        if self.planned is None or rate <= 0:
            return None
        return max(0.0, (self.planned - self.done) / rate)

    def provider_unreachable(self) -> bool:
        """No unit of this invocation produced a candidate and at least one failed transiently (429/5xx/timeouts/
        connection refused after every retry): nothing useful was done, and the same command retries them."""
        return self.accepted == 0 and self.codes.get(ReasonCode.TRANSIENT_FAILURE, 0) > 0

    def record(self, record: Candidate | Rejection) -> None:
        self.done += 1
        accepted = isinstance(record, Candidate)
        self.accepted += accepted
        self.rejected += not accepted
        outcome = "accepted" if accepted else "rejected"
        self.by_category.setdefault(record.category, {"accepted": 0, "rejected": 0})[outcome] += 1
        if isinstance(record, Rejection):
            for code in record.codes:
                self.codes[code] = self.codes.get(code, 0) + 1
            if ReasonCode.TRANSIENT_FAILURE in record.codes and record.messages:
                self.transient_message = record.messages[-1]
        usage = record.provenance.usage
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        cost = record.provenance.cost
        self.cost = None if self.cost is None or cost is None else self.cost + cost
        if isinstance(cost, (int, float)):
            self.largest_unit_cost = max(self.largest_unit_cost, float(cost))


@dataclass
class RunResult:
    """What `run` returns: where the outputs are, the manifest it wrote and this invocation's progress."""

    out_dir: Path
    manifest: RunManifest
    progress: RunProgress


def split_by_support(engine: Engine, categories: list[Category]) -> tuple[list[Category], dict[str, str]]:
    """The categories the engine can make, and why it skips the others (skipped categories are not units)."""
    supported, skipped = [], {}
    for category in categories:
        reason = engine.unsupported_reason(category)
        if reason is None:
            supported.append(category)
        else:
            skipped[category.id] = reason
    if not supported:
        names = ", ".join(f"{cid} ({why})" for cid, why in skipped.items())
        raise UserError(
            f"the {engine.describe()['engine']} engine cannot make {names}; pass --model with an LLM, e.g. "
            "--model gpt-4o, or --model openai/NAME --api-base http://127.0.0.1:8000/v1"
        )
    return supported, skipped


def run_configuration(spec: RunSpec, engine: Engine, input_identity: dict[str, Any],
                      categories: list[Category] | None = None) -> dict[str, Any]:
    """The settings that change outputs: a run directory continues only under the same ones.

    `categories` are the ones the engine can make (default: all of the spec's). The keys and their order are part
    of every run directory's identity (`config_hash`): adding or renaming one makes every existing run refuse to
    resume, so `tests/test_contracts.py` pins the hash of a known configuration.
    """
    taxonomy = spec.taxonomy
    categories = spec.categories if categories is None else categories
    return {
        "input": input_identity,
        "taxonomy": taxonomy.name,
        "taxonomy_path": str(taxonomy.path) if taxonomy.path else None,
        "taxonomy_hash": taxonomy.file_hash(),
        "categories": [c.id for c in categories],
        "template_hashes": {c.id: taxonomy.template_hash(c) for c in categories},
        **engine.describe(),
        "output_mode": spec.output_mode,
        "samples": spec.samples,
        "seed": spec.seed,
    }


def config_hash(config: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]


def iter_units(
    trajectories: Iterable[Trajectory], categories: list[Category], samples: int, limit: int | None
) -> Iterator[Unit]:
    # islice, not a counter: a limit must not read (and count as read) one record more than it uses.
    for trajectory in itertools.islice(trajectories, limit):
        for category in categories:
            for sample in range(samples):
                yield Unit(trajectory, category, sample)


def planned_units(trajectories: TrajectoryInput, categories: list[Category], samples: int,
                   limit: int | None) -> int | None:
    estimate = trajectories.estimated_count()
    if estimate is None:
        estimate = limit
    elif limit is not None:
        estimate = min(estimate, limit)
    return None if estimate is None else estimate * len(categories) * samples


class UnitExecutor(Protocol):
    """Somewhere else to run a run's units (`injector.runner.executors.processes.WorkerProcesses`, `injector.runner.executors.ray_actors.RayExecutor`): the same units and the same
    `inject_one`, every record appended to `run_dir` and counted in `progress`; raises as the local loop does
    (`BudgetExceeded`, the first failure)."""

    def run_units(self, units: Iterator[Unit], spec: RunSpec, engine: Engine, run_dir: RunDirectory,
                  progress: RunProgress, on_progress: Callable[[RunProgress], None] | None) -> None: ...


