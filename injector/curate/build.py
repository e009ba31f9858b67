"""`inject build`: a benchmark split from reviewed runs: accepted candidates (with reviewers' corrections), and
optionally their sources as correct controls, assigned to splits and written beside `out`, then moved into place.
What a build takes is one `BuildRequest`; the rows come from `rows.py`, the files a split holds from `exports.py`,
its card from `card.py`, the all-or-nothing write from `staging.py`."""
from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import operator
import shutil
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from injector.curate.build_report import BuildReport
from injector.curate.exports import EXPORT_DIRS, write_split
from injector.curate.row_spill import RowKey, RowSpill
from injector.curate.rows import CORRECT, collect_keys, collect_rows
from injector.curate.staging import move_into_place, staging_dir
from injector.engines.settings import SettingsConflict
from injector.triage.verdicts import VERDICTS
from injector.util.errors import UserError

__all__ = ["CORRECT", "BuildReport", "BuildRequest", "assign_splits", "build", "collect_rows", "required_verdicts"]


def required_verdicts(text: str | Iterable[str] | None) -> tuple[str, ...]:
    """`require`: verdict names, comma-separated or several; an unknown name is a `SettingsConflict`."""
    names = [text] if isinstance(text, str) else list(text or [])
    wanted = tuple(dict.fromkeys(n.strip() for name in names for n in name.split(",") if n.strip()))
    unknown = [name for name in wanted if name not in VERDICTS]
    if unknown or (names and not wanted):
        raise SettingsConflict(f"`require` {','.join(unknown) or '(nothing)'}: not a verdict; choose from "
                               f"{', '.join(VERDICTS)} (comma-separated)")
    return wanted


class BuildRequest(BaseModel):
    """One `inject build`: the runs it reads, the split directory it writes, and what it keeps and leaves out.

    `require` keeps only candidates with those `inject verify` verdicts; `decontaminate` (benchmark files) drops
    candidates whose question is in them (`decontaminate_field`: their question field); `dedup` drops
    near-duplicates within each split at Jaccard similarity `dedup_threshold` (`triage/dedup.py`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    run_dirs: tuple[Path, ...] = Field(min_length=1)
    out: Path
    by: Literal["category", "train-test"] = "category"
    test_size: float | None = None
    """The fraction of source trajectories in `test` (with `by=train-test`)."""
    seed: int = 0
    include_unreviewed: bool = False
    include_sources: bool = False
    overwrite: bool = False
    license: str = "other"
    command: tuple[str, ...] = ()
    """The command line that reproduces the split (for its card)."""
    push_to_hub: str | None = None
    taxonomy: str | Path | None = None
    require: tuple[str, ...] = ()
    dedup: bool = False
    dedup_threshold: float = 0.9
    decontaminate: tuple[Path, ...] = ()
    decontaminate_field: str | None = None
    hard_for: tuple[Path, ...] = ()
    """`inject eval` report directories of a panel of models: keep only the items they miss (`hard_for.py`)."""
    hard_check: tuple[Path, ...] = ()
    """Reports of models outside the panel, whose ranking change the build reports."""
    hard_min_wrong: int | None = Field(default=None, ge=1)
    """Panel models that must miss an item for it to stay (default: all of them)."""
    private: bool = False
    """With `push_to_hub`: create the Hub repository private."""
    cues: bool = True
    """Compute the card's surface-cue figures (on at most `cue_sample` rows per category)."""
    cue_sample: int = Field(default=5000, ge=10)
    consensus: str | None = None
    """Only candidates whose reviewers meet this rule: `K-of-N` or `adjudicated` (`review/consensus.py`)."""
    require_audit_clean: bool = False
    """Leave out candidates the step audit flags (`triage/step_audit/hooks.py`)."""

    @field_validator("consensus")
    @classmethod
    def _consensus_rule(cls, value: str | None) -> str | None:
        if value is not None:
            from injector.curate.review.consensus import parse_rule

            parse_rule(value)  # a bad rule stops the build before anything is read
        return value

    @field_validator("require", mode="before")
    @classmethod
    def _verdicts(cls, value: Any) -> tuple[str, ...]:
        return required_verdicts(value)

    @model_validator(mode="after")
    def _combinations(self) -> BuildRequest:
        if self.test_size is not None and not 0 < self.test_size < 1:
            raise SettingsConflict(f"`test_size` {self.test_size}: give a fraction between 0 and 1, e.g. 0.2")
        if self.by == "train-test" and self.test_size is None:
            raise SettingsConflict("`by=train-test` needs `test_size` between 0 and 1, e.g. `test_size=0.2`")
        if (self.hard_check or self.hard_min_wrong is not None) and not self.hard_for:
            raise SettingsConflict("`hard_check` and `hard_min_wrong` go with `hard_for` (the panel's reports)")
        if self.private and not self.push_to_hub:
            raise SettingsConflict("`private` goes with `push_to_hub`")
        if self.consensus is not None and self.include_unreviewed:
            raise SettingsConflict("`consensus` and `include_unreviewed` do not go together: a consensus build takes "
                                   "only candidates whose reviewers meet the rule; drop one of them")
        if not 0 < self.dedup_threshold <= 1:
            raise SettingsConflict(f"`dedup_threshold` {self.dedup_threshold}: give a Jaccard similarity in (0, 1], "
                                   "e.g. 0.9")
        return self


def _stable_unit(seed: int, key: str) -> float:
    """A number in [0, 1) fixed by (seed, key): the same split on every machine and every run."""
    digest = hashlib.sha256(f"{seed}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def assign_splits(rows: list[Any], *, by: str, test_size: float | None, seed: int) -> dict[str, list[Any]]:
    """Rows (split rows, or a build's `RowKey`s) per split: one split per category, or train/test by source problem
    (no problem in both: PRMBench's category files echo one problem under several trajectory ids)."""
    splits: dict[str, list[Any]] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r.category, r.trajectory_id, r.sample, r.run, r.id)):
        if by == "category":
            splits[row.category].append(row)
        else:
            test = _stable_unit(seed, row.problem_key or row.trajectory_id) < (test_size or 0.0)
            splits["test" if test else "train"].append(row)
    clash = set(splits) & set(EXPORT_DIRS)
    if clash:
        raise UserError(f"split name {sorted(clash)[0]!r} clashes with an export directory; rename the category")
    return dict(sorted(splits.items()))


def _without(rows: list[RowKey], dropped: list[Any], report: BuildReport | None = None) -> list[RowKey]:
    """`rows` less the dropped ones (by id: split ids are unique); with `report`, the drops are recorded there."""
    if report is not None:
        report.dropped.extend(dropped)
    gone = {d.id for d in dropped}
    return [row for row in rows if row.id not in gone]


def _read_benchmarks(request: BuildRequest, report: BuildReport) -> Any:
    """The benchmark questions `decontaminate` names (None: none named); a bad file stops the build first."""
    if not request.decontaminate:
        return None
    from injector.triage.dedup import read_benchmarks

    report.benchmark_files = [str(path) for path in request.decontaminate]
    benchmark = read_benchmarks(request.decontaminate, request.decontaminate_field)
    report.benchmark_questions = benchmark.count
    return benchmark


def _split_rows(request: BuildRequest, report: BuildReport, rows: list[RowKey], benchmark: Any,
                spill: RowSpill) -> tuple[list[RowKey], dict[str, list[RowKey]]]:
    """The rows left once `decontaminate` and `dedup` have dropped theirs, and those rows per split (their records
    read back from `spill` one at a time; `dedup` keeps signatures, not records)."""
    if benchmark is not None:
        from injector.triage.dedup import contaminated

        rows = _without(rows, contaminated(spill.records(rows), benchmark), report)  # type: ignore[arg-type]
    splits = assign_splits(rows, by=request.by, test_size=request.test_size, seed=request.seed)
    if request.dedup:
        from injector.triage.dedup import near_duplicates

        dropped = [d for split_rows in splits.values()
                   for d in near_duplicates(spill.records(split_rows), request.dedup_threshold)]
        rows = _without(rows, dropped, report)
        splits = {name: kept for name, split_rows in splits.items() if (kept := _without(split_rows, dropped))}
    if not rows:
        raise UserError(f"all {len(report.dropped)} candidates were left out by `decontaminate` or `dedup`, so "
                        "nothing was built; check the benchmark files given, or raise `dedup_threshold`")
    return rows, splits


def _hard_rows(request: BuildRequest, report: BuildReport, rows: list[RowKey]) -> list[RowKey]:
    """With `hard_for`: the rows at least `hard_min_wrong` panel models miss (read before anything is written)."""
    if not request.hard_for:
        return rows
    from injector.curate.hard_for import hard_filter, read_answers

    panel = [read_answers(path) for path in request.hard_for]
    outside = [read_answers(path) for path in request.hard_check]
    report.hard_for = hard_filter([row.id for row in rows], panel, outside, min_wrong=request.hard_min_wrong,
                                  seed=request.seed)
    kept = set(report.hard_for.kept)
    if not kept:
        raise UserError(f"`hard_for`: no item is missed by {report.hard_for.min_wrong} of the "
                        f"{len(panel)} panel models, so nothing was built; lower `hard_min_wrong`")
    return [row for row in rows if row.id in kept]


def _count_verdicts(report: BuildReport, rows: list[RowKey]) -> None:
    """The verdicts of the rows into the report (those of verified runs only)."""
    for row in rows:
        report.verdicts[(row.category, row._verdict)] += 1
        if row._audit_flagged is not None:
            report.audited[row.category] += 1
            report.audit_flagged[row.category] += row._audit_flagged
    report.verdicts = Counter({key: n for key, n in report.verdicts.items() if key[1] is not None})


def _probe_cues(report: BuildReport, rows: list[RowKey], spill: RowSpill) -> None:
    """The card's cue figures, before any table is written (the probe's memory and the writers' do not add up),
    on the rows `card.cue_sample` picks from the split's rows in the order they were read, read back from
    `spill`; the rest of the card's figures are counted as the tables are written (`_write`)."""
    from injector.curate.card import probe_cues
    from injector.curate.card_figures import CardFigures, sampled_keys

    report.figures = CardFigures(cue_sample=report.cue_sample)
    if report.cue_sample is None:
        probe_cues(report.figures)  # `--no-cues`: the card says so
        return
    from injector.triage.cues import cue_records

    sample = sampled_keys(sorted(rows, key=lambda row: row.seq), report.cue_sample)
    probe_cues(report.figures, [cue_records([(record, "in_split")])[0] for record in spill.records(sample)])


def _write(request: BuildRequest, report: BuildReport, splits: dict[str, list[RowKey]], spill: RowSpill,
           staging: Path) -> None:
    """The split's files, written into `staging` beside `out` and renamed into place at the end: a failure
    leaves no half split."""
    from injector.curate.card import dataset_card

    target = request.out.resolve()  # `out` given as `.`, or a symlink to a split: replace the directory it names
    written = itertools.chain.from_iterable(splits.values())  # the order `write_split` writes the rows in

    def count(record: dict[str, Any], answers: Any) -> None:  # each row into the card's figures, in its place
        key = next(written)
        assert key.id == record["id"], "the rows are counted in the order they are written"
        report.figures.add(record, seq=key.seq, answers=answers)

    try:
        # (classification, idx) order by two stable sorts: no key tuple per row (~60 B each) alive at once
        prmbench = sorted(report.rows, key=operator.attrgetter("idx"))
        prmbench.sort(key=operator.attrgetter("classification"))
        write_split(staging, {name: functools.partial(spill.records, keys) for name, keys in splits.items()},
                    spill.records(prmbench),
                    lambda: dataset_card(report, license=request.license, command=list(request.command)), count)
        if report.hard_for is not None:
            from injector.curate.hard_for import HARD_FOR_FILE

            (staging / HARD_FOR_FILE).write_text(json.dumps(report.hard_for.as_json(), indent=1) + "\n")
        spill.close()
        spill.path.unlink()
        move_into_place(staging, target)
    except OSError as exc:
        raise _cannot_write(request, exc) from None


def _cannot_write(request: BuildRequest, exc: OSError) -> UserError:
    where = f" writing {exc.filename}" if exc.filename else ""
    return UserError(f"{request.out}: cannot write the split ({exc.strerror or exc}{where}); nothing was written "
                     "and an existing split is left as it was; free space or choose a writable `out`")


def _rows(request: BuildRequest, report: BuildReport, spill: RowSpill) -> list[RowKey]:
    """Every row's key, its record in `spill`, read and checked before anything is written, with the runs' review
    figures and funnel for the card."""
    try:
        rows = collect_keys(request.run_dirs, spill, include_unreviewed=request.include_unreviewed,
                            include_sources=request.include_sources, report=report, taxonomy=request.taxonomy,
                            require=request.require, consensus=request.consensus)
    except OSError as exc:
        if spill.failed:
            raise _cannot_write(request, exc) from None
        raise
    from injector.curate.calibration import review_figures

    report.reviews = review_figures(list(request.run_dirs))
    from injector.curate.reproduce import run_origins

    report.runs = run_origins(request.run_dirs)
    from injector.curate.funnel import funnel

    report.funnel = None if (figures := funnel(request.run_dirs, request.consensus)) is None else figures.model_dump()
    if not rows:
        left_out = (" or `require`" if report.left_out_by_verdict else "") + (
            " or `require_audit_clean`" if report.left_out_by_audit else "")
        raise UserError(f"no accepted candidates to build from{left_out}: review the run first (`inject review "
                        "RUN_DIR`), or pass `include_unreviewed`")
    return rows


def build(request: BuildRequest) -> BuildReport:
    """Write a split directory from run directories (docs: "Benchmark splits"); what each option left out is
    counted in the card. The rows stream: each is read once into a spill file in the staging directory, and
    written out from there split by split; only a key per row and the card's figures stay in memory."""
    import datasets

    datasets.disable_progress_bars()  # the command prints its own one-line summary
    out = request.out
    if out.exists() and any(out.iterdir()) and not request.overwrite:
        raise UserError(f"{out} is not empty; choose another `out` or pass `overwrite`")
    report = BuildReport(out_dir=out, required=request.require,
                         dedup_threshold=request.dedup_threshold if request.dedup else None,
                         cue_sample=request.cue_sample if request.cues else None,
                         require_audit_clean=request.require_audit_clean)
    benchmark = _read_benchmarks(request, report)
    target = request.out.resolve()
    made = [parent for parent in target.parents if not parent.exists()]  # deepest first
    staging = staging_dir(target)
    spill = RowSpill(staging / ".rows.spill")
    try:
        rows = _hard_rows(request, report, _rows(request, report, spill))
        rows, splits = _split_rows(request, report, rows, benchmark, spill)
        _count_verdicts(report, rows)
        report.rows = rows
        report.splits = {name: len(split_rows) for name, split_rows in splits.items()}
        _probe_cues(report, rows, spill)
        _write(request, report, splits, spill, staging)
    except BaseException:
        spill.close()
        shutil.rmtree(staging, ignore_errors=True)
        for parent in made:  # a refused build leaves nothing behind, not even the directories made for `out`
            with contextlib.suppress(OSError):
                parent.rmdir()
        raise
    finally:
        spill.close()
        shutil.rmtree(staging, ignore_errors=True)
    if request.push_to_hub:
        from injector.curate.hub import push_split
        from injector.util.version import __version__

        push_split(request.out, request.push_to_hub, private=request.private, toolkit_version=__version__)
    return report
