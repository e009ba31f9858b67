"""The triage verdicts `inject verify` writes to `RUN/verify.jsonl`, and how other stages read them.

One line per candidate, keyed by the candidate's `id`. The review app sorts and filters by `verdict` (reading a
line by its offset in its index), and `inject build --require` keeps only candidates with the verdicts named
(through `latest_verdicts`, the verdict alone per candidate; `read_verdicts` gives whole records). A later line for
the same id (a re-verify) replaces an earlier one.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Iterable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from injector.engines.base import Proposal
from injector.model.provenance import EngineInfo
from injector.records.directory import RunDirectory
from injector.records.jsonl import problem_of, read_jsonl_numbered
from injector.records.unit_ids import Digests, text_digest

log = logging.getLogger(__name__)

VERIFY_FILE = "verify.jsonl"
VERIFY_SUMMARY_FILE = "verify-summary.json"

Verdict = Literal["missed", "original_flagged", "disputed", "unparseable", "flagged", "early", "late", "confirmed"]
VERDICTS: tuple[str, ...] = ("missed", "original_flagged", "disputed", "unparseable", "flagged", "early", "late",
                             "confirmed")
"""Every verdict, in the order a reviewer should look at them: the likeliest bad items first, `confirmed` last."""

CritiqueKind = Literal["error", "redundancy", "circular", "alternative"]
"""What the blind judge was asked for: the earliest wrong step (soundness and sensitivity categories), the
earliest removable step (redundancy), the earliest step assuming what it shows (circular logic), or the earliest
wrong step of an alternative solution (multi_solution)."""


class JudgeAnswer(BaseModel):
    """One critique's parsed answer: `first_error_step` is 1-based, -1 for "none", None when unparseable."""

    model_config = ConfigDict(extra="forbid")

    first_error_step: int | None
    reason: str = ""
    raw: str | None = None
    """The judge's last answer text (its first 2,000 characters) when it could not be read, for the reviewer
    (written only then)."""


class JudgeUsage(BaseModel):
    """Requests, tokens and dollars of the judge (None once any answer had no known price)."""

    model_config = ConfigDict(extra="forbid")

    requests: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0

    def add(self, proposal: Proposal) -> None:
        if proposal.details.get("cached"):
            self.cached += 1
        else:
            self.requests += 1
        self.prompt_tokens += proposal.usage.get("prompt_tokens", 0)
        self.completion_tokens += proposal.usage.get("completion_tokens", 0)
        self.cost = None if self.cost is None or proposal.cost is None else self.cost + proposal.cost

    def merge(self, other: JudgeUsage) -> None:
        self.requests += other.requests
        self.cached += other.cached
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost = None if self.cost is None or other.cost is None else self.cost + other.cost


class MonteCarlo(BaseModel):
    """Rollout scores (`--rollouts N`): the share of N continuations reaching the right answer from the prefix
    before the first error step and from the prefix through it."""

    model_config = ConfigDict(extra="forbid")

    n: int
    before: float | None = None
    before_correct: int | None = None
    through: float | None = None
    through_correct: int | None = None
    answer: str | None = None
    """The answer the continuations were judged against."""


class JudgeSettings(EngineInfo):
    """What makes a verdict, recorded on every line: the judge engine's description (its own settings as extra
    fields) and the pass's votes, rollouts and seed. A rerun with the same settings skips verified candidates."""

    votes: int = 1
    votes_all: bool = False
    rollouts: int = 0
    seed: int = 0
    rollout_model: str | None = None
    """The rollouts' model, when it is not the judge (written only then)."""

    def same_as(self, other: JudgeSettings) -> bool:
        """The same settings, field for field as they were written."""
        return self.model_dump(exclude_unset=True) == other.model_dump(exclude_unset=True)


class VerifyRecord(BaseModel):
    """One line of `verify.jsonl`, written and read back as this model."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """The candidate's `id` (as in candidates.jsonl)."""
    category: str
    trajectory_id: str
    verdict: Verdict
    kind: CritiqueKind
    declared_first_error: int | None
    """The candidate's first declared error step (1-based), None for multi_solution."""
    judge_modified: JudgeAnswer | None
    """The majority answer on the modified solution (None if it could not be had)."""
    judge_original: JudgeAnswer | None
    """The answer on the original solution, for the same critique kind (None for multi_solution)."""
    votes: list[int | None] = []
    """Every sampled `first_error_step` on the modified solution (None = unparseable)."""
    mc: MonteCarlo | None = None
    """Monte Carlo rollout scores, when `--rollouts` ran for this candidate."""
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    """What this candidate's critiques cost (an original's, shared, on the candidate that asked first)."""
    verdict_votes: list[Verdict] = []
    """The verdict of every vote, in order (the majority is `verdict`)."""
    judge: JudgeSettings | None = None
    time: str | None = None

    @property
    def reason(self) -> str:
        """The judge's reason on the modified solution, for display."""
        return self.judge_modified.reason if self.judge_modified else ""


def read_verdicts(run_dir: Path) -> dict[str, VerifyRecord]:
    """Candidate id -> its latest verify record; empty when the run was never verified. A line that is not a
    verify record is skipped with a FILE:LINE warning (a received run directory may hold anything)."""
    return {record.id: record for record in iter_verdicts(run_dir)}


class LatestVerdicts:
    """Candidate id -> the verdict of its latest verify record (`get`, `in`, `len`), held as the id's 16-byte digest
    and the verdict's number: ~40 bytes a candidate, where a dict of the records was ~3 KB (2 GB for a `build` of
    300k verified candidates)."""

    def __init__(self, records: Iterable[VerifyRecord] = ()) -> None:
        self._numbers = Digests()
        self._names: list[str] = []  # the verdicts by number, in the order first seen (a handful)
        for record in records:
            if record.verdict not in self._names:
                self._names.append(record.verdict)
            self._numbers.put(text_digest(record.id), self._names.index(record.verdict))

    def get(self, candidate_id: str) -> str | None:
        """The verdict of `candidate_id`'s latest record, or None (never verified)."""
        number = self._numbers.value(text_digest(candidate_id))
        return None if number is None else self._names[number]

    def __contains__(self, candidate_id: object) -> bool:
        return isinstance(candidate_id, str) and self._numbers.value(text_digest(candidate_id)) is not None

    def __len__(self) -> int:
        return len(self._numbers)


def latest_verdicts(run_dir: Path) -> LatestVerdicts:
    """`read_verdicts` for readers that need the verdict alone (build, stats, the funnel, calibration)."""
    return LatestVerdicts(iter_verdicts(run_dir))


def verdict_counts(path: Path) -> dict[str, dict[str, int]] | None:
    """Category -> verdict -> candidates, from a run directory's `verify.jsonl` (`inject verify`), in reviewer order,
    `unverified` for candidates it has no verdict for yet; None when the run was not verified."""
    if not (path.is_dir() and (path / VERIFY_FILE).is_file()):
        return None
    verdicts = latest_verdicts(path)
    counts: Counter = Counter()
    for _, candidate in RunDirectory(path).numbered_candidates():
        counts[(candidate.category, verdicts.get(candidate.id) or "unverified")] += 1
    result: dict[str, dict[str, int]] = {}
    for (category, verdict), n in sorted(counts.items(), key=lambda item: (item[0][0], verdict_rank(item[0][1]))):
        result.setdefault(category, {})[verdict] = n
    return result


def iter_verdicts(run_dir: Path) -> Iterator[VerifyRecord]:
    """Every verify record of the run in file order (a candidate judged again has several; the last one counts),
    one at a time, for readers that keep only what they need of each."""
    path = Path(run_dir) / VERIFY_FILE
    for number, value in read_jsonl_numbered(path):
        try:
            if not isinstance(value, dict):
                raise ValueError("a JSON object expected")
            record = VerifyRecord.model_validate(value)
        except ValueError as exc:
            problem = problem_of(exc) if isinstance(exc, ValidationError) else str(exc)
            log.warning("%s:%d: not a verify record (%s); skipped", path, number, problem)
            continue
        yield record


def verdict_rank(verdict: str | None) -> int:
    """Sort key: the order of `VERDICTS`, unverified candidates after all verified ones."""
    return VERDICTS.index(verdict) if verdict in VERDICTS else len(VERDICTS)
