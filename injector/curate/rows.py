"""The rows of a split, read from run directories: accepted candidates with reviewers' corrections applied (and,
optionally, their sources as correct controls), every row checked before anything is written."""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from injector.curate.build_report import BuildReport
from injector.curate.exports import PRMBENCH_FIELDS
from injector.curate.row_spill import RowKey, RowSpill
from injector.model.split_row import SplitRow, StepExplanation
from injector.records.directory import RunDirectory
from injector.model.problem import row_problem_key
from injector.model.provenance import Provenance
from injector.records.models import Candidate
from injector.triage.step_audit.hooks import flagged_for_build
from injector.triage.verdicts import VERIFY_FILE, LatestVerdicts, latest_verdicts
from injector.util.errors import UserError
from injector.util.safe_files import is_file_safe_id

CORRECT = "correct"  # the category of source solutions added as correct control items


def _decisions(run_dir: Path, taxonomy: str | Path | None,
               consensus: str | None = None) -> tuple[dict[str, Any], Any]:
    """The latest decision per candidate id of a run (with `consensus`, the decision that stands under that rule,
    for the candidates that meet it: `review/consensus.py`), and the review session whose `check_record` re-checks
    them (None without a review store); `taxonomy` as `ReviewSession` takes it (never the run's hooks unless named)."""
    if not (run_dir / "review.sqlite").exists():
        return {}, None
    from injector.curate.review.session import ReviewSession

    session = ReviewSession([run_dir], taxonomy=taxonomy, listing=False)  # no queue to index: rows read every record
    if consensus is not None:
        from injector.curate.review.consensus import consensus_decisions

        rows = session.runs[0].store.rows()
        return consensus_decisions(rows, consensus, RunDirectory(run_dir).candidates()), session
    return session.runs[0].store.latest(), session


def _categories_of(run_dir: RunDirectory, taxonomy: Any = None) -> dict[str, dict[str, str]]:
    """Name and domain of each category of a run: from `taxonomy` (the user's `--taxonomy`) where it has the
    category, else as the run's manifest recorded them (data only: nothing of the run is imported)."""
    categories = run_dir.manifest_categories()
    for category in taxonomy.categories if taxonomy is not None else []:
        categories[category.id] = {**categories.get(category.id, {}), "name": category.name,
                                   "domain": category.domain}
    return categories


@dataclass
class _RunReading:
    """What one run directory brings to the rows: its categories, decisions and verdicts."""

    path: Path
    directory: RunDirectory
    categories: dict[str, dict[str, str]]
    config_hash: str
    decisions: dict[str, Any]
    session: Any
    verified: bool
    verdicts: LatestVerdicts


@dataclass
class _RowCollector:
    """Collects the rows of several runs, one at a time into `emit` (and their sources as correct controls into
    `emit_source`, with `include_sources`), counting in `report` what it leaves out."""

    report: BuildReport
    include_unreviewed: bool
    taxonomy: str | Path | None
    require: tuple[str, ...]
    emit: Callable[[SplitRow], Any]
    named: Any = None
    consensus: str | None = None
    """`--consensus`: only candidates whose reviewers meet this rule (K-of-N or adjudicated) enter."""
    emit_source: Callable[[SplitRow], Any] | None = None
    sources: set[str] = field(default_factory=set)
    """The trajectories whose source is already a row (the first accepted candidate of each brings it)."""
    refused: list[str] = field(default_factory=list)

    def open_run(self, run_path: Path) -> _RunReading:
        run_dir = RunDirectory(run_path)
        if not run_dir.candidates_path.is_file() or not run_dir.manifest_path.is_file():
            raise UserError(f"{run_path}: not a run directory (no candidates.jsonl / manifest.json); "
                            "pass directories written by `inject run`")
        categories = _categories_of(run_dir, self.named)
        manifest = run_dir.read_manifest()
        config_hash = (manifest.config_hash if manifest is not None else None) or ""
        decisions, session = _decisions(run_path, self.taxonomy, self.consensus)
        verified = (run_path / VERIFY_FILE).is_file()
        if self.require and not verified:
            raise UserError(f"{run_path}: no {VERIFY_FILE}, so `require` has no verdicts to keep; run `inject "
                            f"verify {run_path} --model MODEL` first, or build without `require`")
        return _RunReading(path=run_path, directory=run_dir, categories=categories, config_hash=config_hash,
                           decisions=decisions, session=session, verified=verified,
                           verdicts=latest_verdicts(run_path) if verified else LatestVerdicts())

    def add_run(self, run_path: Path) -> None:
        run = self.open_run(run_path)
        for reject in run.directory.rejections():
            self.report.run_rejects += 1
            self.report.reject_codes.update(reject.codes)
        for candidate in run.directory.candidates(strict=True):
            self.report.candidates_seen += 1
            self.add_candidate(run, candidate)

    def add_candidate(self, run: _RunReading, candidate: Candidate) -> None:
        from injector.curate.review.session import Refused
        from injector.curate.review.store import apply_decision

        decision = run.decisions.get(candidate.id)
        if decision is not None:
            # A stored decision passes the review app's own checks or the build stops: a row imported or
            # written around the app (an error step past the end, an empty step) must not ship.
            try:
                decision = run.session.check_record(0, candidate, decision)  # run 0: the session holds this run
            except Refused as exc:
                self.refused.append(f"{run.path / 'review.sqlite'}: candidate {candidate.id!r}: {exc}")
                return
        verdict = self.verdict_of(run, candidate)
        if not self.admitted(candidate, decision, verdict):
            return
        if decision is not None:
            candidate = apply_decision(candidate, decision)
        flagged = flagged_for_build(candidate, decision is not None, self.report.require_audit_clean)
        if self.report.require_audit_clean and flagged:
            self.report.left_out_by_audit[candidate.category] += 1
            return
        category = run.categories.get(candidate.category, {})
        _check_classification(run.path, candidate, run.categories)
        row = _row(candidate, run.path.name, category.get("domain", ""), category.get("name", candidate.category),
                   reviewed=decision is not None, reviewer=decision.reviewer if decision else "",
                   config_hash=run.config_hash)
        row._verdict, row._audit_flagged = verdict, flagged
        self.emit(row)
        if candidate.trajectory_id not in self.sources:
            self.sources.add(candidate.trajectory_id)
            if self.emit_source is not None:
                self.emit_source(_source_row(candidate))

    @staticmethod
    def verdict_of(run: _RunReading, candidate: Candidate) -> str | None:
        verdict = run.verdicts.get(candidate.id)
        return verdict if verdict is not None else ("unverified" if run.verified else None)

    def admitted(self, candidate: Candidate, decision: Any, verdict: str | None) -> bool:
        """Whether the candidate enters the split; what leaves it out is counted in the report."""
        if decision is not None and decision.decision == "reject":
            self.report.rejected_by_reviewer += 1
            self.report.reviewer_reasons[decision.reason or "(no reason)"] += 1
            return False
        if decision is None and not self.include_unreviewed:
            self.report.unreviewed_left_out += 1
            return False
        if self.require and verdict not in self.require:
            self.report.left_out_by_verdict[(candidate.category, verdict)] += 1
            return False
        return True


def collect_rows(run_dirs: Iterable[str | Path], *, include_unreviewed: bool = False,
                 include_sources: bool = False, report: BuildReport,
                 taxonomy: str | Path | None = None, require: tuple[str, ...] = (),
                 consensus: str | None = None) -> list[SplitRow]:
    """Accepted candidates of every run directory, corrections applied, as split rows (all in memory: for small
    runs and tools; `build` keeps only a key per row, `collect_keys`).

    `taxonomy` (a name or path the user gave) names the categories and re-checks reviewers' corrections; without
    it the runs' manifests name them and each run's taxonomy is read for its rules only. A candidate line that is
    not a candidate record stops the build (`InputError` naming FILE:LINE): a split must not silently lack one.
    `require` (verdict names) keeps only candidates `inject verify` gave one of them; each row carries its verdict
    as its private `_verdict` (None when its run was not verified), for `build` to count.
    """
    rows: list[SplitRow] = []
    sources: list[SplitRow] = []
    _collect(run_dirs, rows.append, sources.append if include_sources else None, report=report,
             include_unreviewed=include_unreviewed, taxonomy=taxonomy, require=require, consensus=consensus)
    rows.extend(sources)
    _unique_ids(rows)
    _unique_idx(rows)
    return rows


def collect_keys(run_dirs: Iterable[str | Path], spill: RowSpill, *, include_unreviewed: bool = False,
                 include_sources: bool = False, report: BuildReport, taxonomy: str | Path | None = None,
                 require: tuple[str, ...] = (), consensus: str | None = None) -> list[RowKey]:
    """`collect_rows` streamed: each row's record appended to `spill` as it is read, a `RowKey` per row returned
    (in `collect_rows`' order, final ids and idx set)."""
    keys: list[RowKey] = []
    sources: list[RowKey] = []
    _collect(run_dirs, lambda row: keys.append(spill.add(row)),
             (lambda row: sources.append(spill.add(row))) if include_sources else None, report=report,
             include_unreviewed=include_unreviewed, taxonomy=taxonomy, require=require, consensus=consensus)
    keys.extend(sources)
    spill.renumber(keys)
    _unique_ids(keys)
    _unique_idx(keys)
    return keys


def _collect(run_dirs: Iterable[str | Path], emit: Callable[[SplitRow], Any],
             emit_source: Callable[[SplitRow], Any] | None, *, report: BuildReport, include_unreviewed: bool,
             taxonomy: str | Path | None, require: tuple[str, ...], consensus: str | None) -> None:
    """Every accepted row of the runs into `emit` as it is read (see `collect_rows`); a reviewer decision that
    fails the review app's checks stops the build once every run is read."""
    from injector.taxonomy import Taxonomy

    collector = _RowCollector(report=report, include_unreviewed=include_unreviewed, taxonomy=taxonomy,
                              require=require, named=Taxonomy.load(taxonomy) if taxonomy is not None else None,
                              consensus=consensus, emit=emit, emit_source=emit_source)
    for run_path in map(Path, run_dirs):
        collector.add_run(run_path)
    if collector.refused:
        raise UserError(f"{len(collector.refused)} reviewer decision(s) fail the review app's checks, so nothing "
                        "was built:\n" + "\n".join(f"  {line}" for line in collector.refused)
                        + "\ndecide these candidates again in `inject review RUN_DIR` (the latest decision wins), "
                        "then build again")


def _check_classification(run_path: Path, candidate: Candidate, categories: dict[str, dict[str, str]]) -> None:
    """A classification names a file of the split (`prmbench/<classification>.jsonl`): only the run's own
    category ids and classifications (as its manifest and `--taxonomy` name them) are accepted, never a raw string
    from a received candidate line (`../../x` would write outside `--out`)."""
    allowed = {CORRECT, *categories, *(str(c.get("classification")) for c in categories.values())}
    known = candidate.classification in allowed or not categories  # a manifest naming none: the id rule alone
    if not known or not is_file_safe_id(candidate.classification):
        raise UserError(f"{run_path / 'candidates.jsonl'}: candidate {candidate.id!r} has classification "
                        f"{candidate.classification[:80]!r}, which is not a category of the run's taxonomy; nothing "
                        "was built (remove the line or pass the run's `taxonomy`)")


def _row(candidate: Candidate, run: str, domain: str, category_name: str, *, reviewed: bool,
         reviewer: str, config_hash: str = "") -> SplitRow:
    explanations = sorted((candidate.explanations or {}).items(), key=lambda item: int(item[0]))
    row = SplitRow(
        **{key: getattr(candidate, key) for key in PRMBENCH_FIELDS},
        source_idx=candidate.idx, id=candidate.id, category=candidate.category, category_name=category_name,
        domain=domain, subject=candidate.subject, images=list(candidate.images),
        trajectory_id=candidate.trajectory_id, sample=candidate.sample, run=run, reviewed=reviewed,
        problem_key=row_problem_key(candidate.model_dump(include={"problem_key", "idx", "trajectory_id",
                                                                  "original_question"})),
        reviewer=reviewer, warnings=list(candidate.warnings),
        explanations=[StepExplanation(step=int(step), text=text) for step, text in explanations],
        ground_truth=candidate.ground_truth, model=candidate.provenance.model or "",
        provenance=json.dumps(candidate.provenance.model_dump(mode="json", exclude_unset=True), ensure_ascii=False,
                              sort_keys=True))
    row._config_hash = config_hash
    return row


def _source_row(candidate: Candidate) -> SplitRow:
    """The source solution itself, as a correct control item (PRMBench's `correct`; ProcessBench label -1)."""
    source = candidate.source_trajectory()
    steps = list(source.steps)
    control = Candidate(
        original_question=source.question, modified_question=source.question, original_process=steps,
        modified_process=steps, modified_steps=[], error_steps=[], reason="", idx=candidate.idx,
        question=candidate.question, classification=CORRECT, id=f"{source.id}::{CORRECT}", category=CORRECT,
        trajectory_id=source.id, sample=0, provenance=Provenance(engine="source"), subject=source.subject,
        images=list(source.images), ground_truth=source.answer,
    )
    return _row(control, "", "control", "Correct", reviewed=True, reviewer="")


def _unique_ids(rows: list[SplitRow] | list[RowKey]) -> None:  # split rows, or a build's keys of them
    """Split ids are unique: when runs over the same input give one id several rows, each of them gets
    `~<first 8 hex digits of its run's config_hash>` (so the suffix does not depend on the order the runs were
    given); if that still repeats (the same run given twice, or a copy of it), the build is refused."""
    by_id: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        by_id[row.id].append(row)
    for rows_of_id in by_id.values():
        if len(rows_of_id) > 1:
            for row in rows_of_id:
                row.id = f"{row.id}~{row._config_hash[:8]}"
    seen: dict[str, str] = {}
    for row in rows:
        if row.id in seen:
            raise UserError(f"candidate {row.id!r} is in runs {seen[row.id]!r} and {row.run!r} made with "
                            "the same configuration (the same run given twice, or a copy of it); give each run once")
        seen[row.id] = row.run


def _unique_idx(rows: list[Any]) -> None:  # split rows, or a build's keys of them
    """PRMBench keeps only the first record per (category, idx): later candidates of one source get `_2`, `_3`, …"""
    seen: Counter = Counter()
    for row in sorted(rows, key=lambda r: (r.classification, r.source_idx, r.trajectory_id, r.sample, r.run, r.id)):
        seen[(row.classification, row.source_idx)] += 1
        count = seen[(row.classification, row.source_idx)]
        row.idx = row.source_idx if count == 1 else f"{row.source_idx}_{count}"
