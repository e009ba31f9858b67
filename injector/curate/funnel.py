"""The funnel of one or more runs, per category: units -> valid candidates -> verified (by verdict) -> reviewed ->
accepted by consensus, with what each stage cost and the cost per accepted, human-verified item; and how many
minutes reviewers spent per item, by solution length.

Costs: generation is the provenance `cost` of every candidate and reject (unknown when a record of a priced engine
has none; the offline engine and source rows cost nothing); verification is the `usage.cost` of every line of
`verify.jsonl` (re-verifies included: they were paid for). Accepted: the decision that stands under the build's
`--consensus` rule, else the adjudicated decision, else the reviewers' majority (a tie is not accepted).

Reviewer minutes: each reviewer's decisions in time order; the time between two is the later candidate's. The
first decision after a pause longer than `IDLE_MINUTES` (or a reviewer's first) has no known start and is left
out; a reviewer's several decisions on one candidate add up.
"""
from __future__ import annotations

from array import array
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Iterator

import numpy as np
from pydantic import BaseModel, Field, computed_field

from injector.records.directory import RunDirectory
from injector.records.jsonl import read_jsonl_numbered, read_records
from injector.records.models import Candidate, Rejection
from injector.records.unit_ids import Digests, text_digest
from injector.util.money import money, rounded_dollars

IDLE_MINUTES = 30.0
LENGTHS = ((12, "steps ≤12"), (26, "steps 13–26"), (None, "steps >26"))
STAGES = ("units", "valid", "verified", "reviewed", "accepted")
FREE_ENGINES = ("offline", "source")


class FunnelRow(BaseModel):
    """One category's (or the total's) funnel."""

    category: str
    units: int = 0
    valid: int = 0
    verified: int = 0
    verdicts: dict[str, int] = Field(default_factory=dict)
    reviewed: int = 0
    accepted: int = 0
    generation_cost: float | None = 0.0
    verify_cost: float | None = 0.0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cost_per_accepted(self) -> float | None:
        """Generation and verification of the whole category, per item that came out accepted."""
        if self.generation_cost is None or self.verify_cost is None or not self.accepted:
            return None
        return rounded_dollars((self.generation_cost + self.verify_cost) / self.accepted)

    def add(self, other: FunnelRow) -> None:
        for stage in STAGES:
            setattr(self, stage, getattr(self, stage) + getattr(other, stage))
        for verdict, n in other.verdicts.items():
            self.verdicts[verdict] = self.verdicts.get(verdict, 0) + n
        self.generation_cost = _plus(self.generation_cost, other.generation_cost)
        self.verify_cost = _plus(self.verify_cost, other.verify_cost)


class ReviewMinutes(BaseModel):
    """Reviewer minutes per item for solutions of one length band."""

    length: str
    items: int
    median: float | None
    p90: float | None


class Funnel(BaseModel):
    consensus: str
    categories: list[FunnelRow]
    total: FunnelRow
    minutes: list[ReviewMinutes]
    idle_minutes: float = IDLE_MINUTES


def _plus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else rounded_dollars(a + b)


def _generation_cost(record: Candidate | Rejection) -> float | None:
    provenance = record.provenance
    if provenance.cost is not None:
        return provenance.cost
    return 0.0 if provenance.engine in FREE_ENGINES else None


def _accepted(run_dir: Path, candidates: Iterable[Candidate], consensus: str | None) -> set[str]:
    from injector.curate.calibration import human_decisions

    if consensus is None:
        return {cid for cid, decision in human_decisions(run_dir).items() if decision == "accept"}
    from injector.curate.review.consensus import consensus_decisions
    from injector.curate.review.store import ReviewStore

    standing = consensus_decisions(ReviewStore(run_dir).rows(), consensus, candidates)
    return {cid for cid, decision in standing.items() if decision.decision == "accept"}


def _run_rows(run_dir: Path, consensus: str | None, rows: dict[str, FunnelRow]) -> None:
    """Adds one run directory's funnel to `rows` (category -> row)."""
    from injector.triage.verdicts import VERIFY_FILE, verdict_counts

    directory = RunDirectory(run_dir)
    decided = _decisions(run_dir)
    accepted = _accepted(run_dir, directory.candidates(), consensus) if decided else set()
    # Counted in a pass of their own: the latest verdicts are let go before the verify costs are read.
    for category, counts in (verdict_counts(Path(run_dir)) or {}).items():
        row = rows.setdefault(category, FunnelRow(category=category))
        for verdict, n in counts.items():
            if verdict != "unverified":
                row.verified += n
                row.verdicts[verdict] = row.verdicts.get(verdict, 0) + n
    verify_costs = _verify_costs(Path(run_dir) / VERIFY_FILE)
    for candidate in directory.candidates():  # one at a time: a run's candidates are never all held
        row = rows.setdefault(candidate.category, FunnelRow(category=candidate.category))
        row.units, row.valid = row.units + 1, row.valid + 1
        row.generation_cost = _plus(row.generation_cost, _generation_cost(candidate))
        for cost in verify_costs.get(candidate.id):
            row.verify_cost = _plus(row.verify_cost, cost)
        row.reviewed += candidate.id in decided
        row.accepted += candidate.id in accepted
    for _, reject in read_records(directory.rejects_path, Rejection):
        row = rows.setdefault(reject.category, FunnelRow(category=reject.category))
        row.units += 1
        row.generation_cost = _plus(row.generation_cost, _generation_cost(reject))


class VerifyCosts:
    """Candidate id -> what each of its `inject verify` lines cost (None: unknown), in file order: each line's cost
    and the next line of its id in arrays, the id as a 16-byte digest (~60 bytes a verified candidate; a dict of id
    strings to lists of floats was ~280). Held per verify line, so a run never verified holds nothing."""

    def __init__(self) -> None:
        self._first_last = Digests()  # id -> its first line << 32 | its last line
        self._cost, self._known, self._next = array("d"), bytearray(), array("q")

    def add(self, candidate_id: str, cost: float | None) -> None:
        line = len(self._cost)
        self._cost.append(0.0 if cost is None else cost)
        self._known.append(cost is not None)
        self._next.append(-1)
        key = text_digest(candidate_id)
        ends = self._first_last.add(key, line << 32 | line)
        if ends is not None:
            self._next[ends & 0xFFFFFFFF] = line
            self._first_last.put(key, (ends >> 32) << 32 | line)

    def get(self, candidate_id: str) -> Iterator[float | None]:
        """The costs of `candidate_id`'s lines, in file order (none when it has none)."""
        ends = self._first_last.value(text_digest(candidate_id))
        line = -1 if ends is None else ends >> 32
        while line >= 0:
            yield self._cost[line] if self._known[line] else None
            line = self._next[line]


def _verify_costs(path: Path) -> VerifyCosts:
    """What each verify line cost, per candidate. Every line was paid for; ones that are not verify records were
    warned about by `latest_verdicts`."""
    costs = VerifyCosts()
    for _, line in read_jsonl_numbered(path):
        if isinstance(line, dict) and isinstance(line.get("id"), str):
            cost = line.get("usage", {}).get("cost") if isinstance(line.get("usage"), dict) else None
            costs.add(line["id"], cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None)
    return costs


def _decisions(run_dir: Path) -> set[str]:
    """Ids of the candidates someone decided on."""
    from injector.curate.review.store import STORE_FILE, ReviewStore

    if not (Path(run_dir) / STORE_FILE).is_file():
        return set()
    return {decision.id for decision in ReviewStore(run_dir).rows()}


def item_minutes(decisions: Iterable[Any], steps_of: dict[str, int]) -> list[tuple[int, float]]:
    """(steps of the solution, minutes) per (reviewer, candidate) whose time is known (module docstring)."""
    from datetime import datetime

    by_reviewer: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for decision in decisions:
        by_reviewer[(decision.reviewer, decision.role)].append(decision)
    spent: dict[tuple[str, str, str], float] = defaultdict(float)
    for (reviewer, role), mine in by_reviewer.items():
        mine.sort(key=lambda d: d.time)
        for before, after in zip(mine, mine[1:]):
            gap = (datetime.fromisoformat(after.time) - datetime.fromisoformat(before.time)).total_seconds() / 60
            if gap <= IDLE_MINUTES and after.id in steps_of:
                spent[(reviewer, role, after.id)] += gap
    return [(steps_of[cid], minutes) for (_, _, cid), minutes in sorted(spent.items())]


def _minutes(run_dirs: list[Path]) -> list[ReviewMinutes]:
    from injector.curate.review.store import STORE_FILE, ReviewStore

    timed: list[tuple[int, float]] = []
    for run_dir in run_dirs:
        if (run_dir / STORE_FILE).is_file():
            steps_of = {c.id: len(c.modified_process) for c in RunDirectory(run_dir).candidates()}
            timed += item_minutes(ReviewStore(run_dir).rows(), steps_of)
    bands = []
    low = 0
    for high, name in LENGTHS:
        values = [m for steps, m in timed if steps > low and (high is None or steps <= high)]
        median, p90 = (round(float(v), 2) for v in np.percentile(values, [50, 90])) if values else (None, None)
        bands.append(ReviewMinutes(length=name, items=len(values), median=median, p90=p90))
        low = high or low
    return bands


def funnel(run_dirs: Iterable[str | Path], consensus: str | None = None) -> Funnel | None:
    """The funnel of run directories (None when none is a run directory)."""
    paths = [Path(p) for p in run_dirs if (Path(p) / "candidates.jsonl").is_file()]
    if not paths:
        return None
    rows: dict[str, FunnelRow] = {}
    for path in paths:
        _run_rows(path, consensus, rows)
    total = FunnelRow(category="total")
    for row in rows.values():
        total.add(row)
    return Funnel(consensus=consensus or "adjudicated, else majority", categories=[rows[c] for c in sorted(rows)],
                  total=total, minutes=_minutes(paths))


def funnel_lines(figures: dict[str, Any]) -> list[str]:
    """`Funnel.model_dump()` as text tables: the stages and costs per category, then reviewer minutes."""
    lines = ["", f"funnel (accepted: {figures['consensus']}; cost per accepted = generation + verify ÷ accepted):",
             f"{'category':22} {'units':>6} {'valid':>6} {'verified':>8} {'reviewed':>8} {'accepted':>8} "
             f"{'generation':>10} {'verify':>10} {'per acc.':>10}  verdicts"]
    for row in [*figures["categories"], figures["total"]]:
        verdicts = ", ".join(f"{v} {n}" for v, n in row["verdicts"].items())
        lines.append(f"{row['category'][:22]:22} {row['units']:6d} {row['valid']:6d} {row['verified']:8d} "
                     f"{row['reviewed']:8d} {row['accepted']:8d} {money(row['generation_cost']):>10} "
                     f"{money(row['verify_cost']):>10} {money(row['cost_per_accepted'], '-'):>10}  {verdicts}")
    if any(band["items"] for band in figures["minutes"]):
        lines += ["", f"reviewer minutes per item (between a reviewer's decisions; pauses over "
                  f"{figures['idle_minutes']:g} min left out):", f"{'length':14} {'items':>6} {'median':>7} {'p90':>7}"]
        lines += [f"{band['length']:14} {band['items']:6d} {_minutes_text(band['median']):>7} "
                  f"{_minutes_text(band['p90']):>7}" for band in figures["minutes"]]
    return lines


def _minutes_text(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def funnel_section(figures: dict[str, Any]) -> str:
    """The funnel as the dataset card's section (Markdown)."""
    return ("## Funnel and cost\n\nFrom the units attempted to the items reviewers accepted, per category, with "
            "what generation and verification cost:\n\n```\n" + "\n".join(funnel_lines(figures)).strip() + "\n```\n")
