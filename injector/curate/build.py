"""`inject build`: a benchmark split from reviewed runs: accepted candidates (with reviewers' corrections), and
optionally their sources as correct controls, assigned to splits and written beside `--out`, then moved into place
(the files a split holds: `exports.py`; its card: `card.py`)."""
from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from injector.util.errors import UserError
from injector.util.safe_files import is_file_safe_id
from injector.curate.exports import EXPORT_DIRS, PRMBENCH_FIELDS, split_features, write_split
from injector.records.directory import Candidate, RunDirectory
from injector.triage.step_audit.hooks import flagged_for_build
from injector.triage.verdicts import VERDICTS, VERIFY_FILE, read_verdicts

CORRECT = "correct"  # the category of source solutions added as correct control items


@dataclass
class BuildReport:
    """What a build wrote and the numbers its card reports."""

    out_dir: Path
    splits: dict[str, int] = field(default_factory=dict)
    rows: list[dict[str, Any]] = field(default_factory=list)
    candidates_seen: int = 0
    rejected_by_reviewer: int = 0
    unreviewed_left_out: int = 0
    reviewer_reasons: Counter = field(default_factory=Counter)
    reject_codes: Counter = field(default_factory=Counter)
    run_rejects: int = 0
    required: tuple[str, ...] = ()
    """`--require`: the verdicts a candidate needed to enter."""
    left_out_by_verdict: Counter = field(default_factory=Counter)
    """(category, verdict or `unverified`) -> candidates `--require` left out."""
    verdicts: Counter = field(default_factory=Counter)
    """(category, verdict or `unverified`) -> rows of the split, when a run was verified."""
    dropped: list = field(default_factory=list)
    """`dedup.Dropped` per row `--decontaminate` or `--dedup` left out, in that order."""
    dedup_threshold: float | None = None
    benchmark_files: list[str] = field(default_factory=list)
    benchmark_questions: int = 0
    require_audit_clean: bool = False
    left_out_by_audit: Counter = field(default_factory=Counter)
    """category -> candidates `--require-audit-clean` left out (a step-audit flag)."""
    audit_flagged: Counter = field(default_factory=Counter)
    """category -> rows of the split with a step-audit flag (audited rows in `audited`)."""
    audited: Counter = field(default_factory=Counter)


def required_verdicts(text: str | Iterable[str] | None) -> tuple[str, ...]:
    """`--require missed,confirmed` (or several options) as verdict names; an unknown name is a UserError."""
    names = [text] if isinstance(text, str) else list(text or [])
    wanted = tuple(dict.fromkeys(n.strip() for name in names for n in name.split(",") if n.strip()))
    unknown = [name for name in wanted if name not in VERDICTS]
    if unknown or (names and not wanted):
        raise UserError(f"--require {','.join(unknown) or '(nothing)'}: not a verdict; choose from "
                        f"{', '.join(VERDICTS)} (comma-separated)")
    return wanted


def _stable_unit(seed: int, key: str) -> float:
    """A number in [0, 1) fixed by (seed, key): the same split on every machine and every run."""
    digest = hashlib.sha256(f"{seed}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def _decisions(run_dir: Path, taxonomy: str | Path | None) -> tuple[dict[str, Any], Any]:
    """The latest decision per candidate id of a run, and the review session whose `check_record` re-checks them
    (None without a review store); `taxonomy` as `ReviewSession` takes it (never the run's hooks unless named)."""
    if not (run_dir / "review.sqlite").exists():
        return {}, None
    from injector.curate.review.session import ReviewSession

    session = ReviewSession([run_dir], taxonomy=taxonomy)
    return session.runs[0].store.latest(), session


def _categories_of(run_dir: RunDirectory, taxonomy: Any = None) -> dict[str, dict[str, str]]:
    """Name and domain of each category of a run: from `taxonomy` (the user's `--taxonomy`) where it has the
    category, else as the run's manifest recorded them (data only: nothing of the run is imported)."""
    categories = run_dir.manifest_categories()
    for category in taxonomy.categories if taxonomy is not None else []:
        categories[category.id] = {**categories.get(category.id, {}), "name": category.name,
                                   "domain": category.domain}
    return categories


def collect_rows(run_dirs: Iterable[str | Path], *, include_unreviewed: bool = False,
                 include_sources: bool = False, report: BuildReport,
                 taxonomy: str | Path | None = None, require: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Accepted candidates of every run directory, corrections applied, as flat rows (one schema for all).

    `taxonomy` (a name or path the user gave) names the categories and re-checks reviewers' corrections; without
    it the runs' manifests name them and each run's taxonomy is read for its rules only. A candidate line that is
    not a candidate record stops the build (`InputError` naming FILE:LINE): a split must not silently lack one.
    `require` (verdict names) keeps only candidates `inject verify` gave one of them; each row carries its verdict
    as `_verdict` (None when its run was not verified) until `build` counts them.
    """
    from injector.curate.review.session import Refused
    from injector.curate.review.store import apply_decision
    from injector.taxonomy import Taxonomy

    named = Taxonomy.load(taxonomy) if taxonomy is not None else None
    rows: list[dict[str, Any]] = []
    sources: dict[str, Candidate] = {}
    refused: list[str] = []
    for run_path in map(Path, run_dirs):
        run_dir = RunDirectory(run_path)
        if not run_dir.candidates_path.is_file() or not run_dir.manifest_path.is_file():
            raise UserError(f"{run_path}: not a run directory (no candidates.jsonl / manifest.json); "
                            "pass directories written by `inject run`")
        categories = _categories_of(run_dir, named)
        config_hash = (run_dir.read_manifest() or {}).get("config_hash")
        decisions, session = _decisions(run_path, taxonomy)
        verified = (run_path / VERIFY_FILE).is_file()
        if require and not verified:
            raise UserError(f"{run_path}: no {VERIFY_FILE}, so --require has no verdicts to keep; run `inject verify "
                            f"{run_path} --model MODEL` first, or build without --require")
        verdicts = read_verdicts(run_path) if verified else {}
        for reject in run_dir.rejections():
            report.run_rejects += 1
            report.reject_codes.update(reject.codes)
        for candidate in run_dir.candidates(strict=True):
            report.candidates_seen += 1
            decision = decisions.get(candidate.id)
            if decision is not None:
                # A stored decision passes the review app's own checks or the build stops: a row imported or
                # written around the app (an error step past the end, an empty step) must not ship.
                try:
                    decision = session.check_record(0, candidate, decision)  # run 0: the session holds this run only
                except Refused as exc:
                    refused.append(f"{run_path / 'review.sqlite'}: candidate {candidate.id!r}: {exc}")
                    continue
            if decision is not None and decision.decision == "reject":
                report.rejected_by_reviewer += 1
                report.reviewer_reasons[decision.reason or "(no reason)"] += 1
                continue
            if decision is None and not include_unreviewed:
                report.unreviewed_left_out += 1
                continue
            record = verdicts.get(candidate.id)
            verdict = record.verdict if record else ("unverified" if verified else None)
            if require and verdict not in require:
                report.left_out_by_verdict[(candidate.category, verdict)] += 1
                continue
            if decision is not None:
                candidate = apply_decision(candidate, decision)
            flagged = flagged_for_build(candidate, decision is not None, report.require_audit_clean)
            if report.require_audit_clean and flagged:
                report.left_out_by_audit[candidate.category] += 1
                continue
            category = categories.get(candidate.category, {})
            _check_classification(run_path, candidate, categories)
            rows.append(_row(candidate, run_path.name, category.get("domain", ""),
                             category.get("name", candidate.category),
                             reviewed=decision is not None, reviewer=decision.reviewer if decision else "",
                             config_hash=str(config_hash or "")))
            rows[-1]["_verdict"], rows[-1]["_audit_flagged"] = verdict, flagged
            sources.setdefault(candidate.trajectory_id, candidate)
    if refused:
        raise UserError(f"{len(refused)} reviewer decision(s) fail the review app's checks, so nothing was built:\n"
                        + "\n".join(f"  {line}" for line in refused) + "\ndecide these candidates again in "
                        "`inject review RUN_DIR` (the latest decision wins), then build again")
    if include_sources:
        rows.extend({**_source_row(candidate), "_verdict": None, "_audit_flagged": None}
                    for candidate in sources.values())
    _unique_ids(rows)
    _unique_idx(rows)
    return rows


def _check_classification(run_path: Path, candidate: Candidate, categories: dict[str, dict[str, str]]) -> None:
    """A classification names a file of the split (`prmbench/<classification>.jsonl`): only the run's own
    category ids and classifications (as its manifest and `--taxonomy` name them) are accepted, never a raw string
    from a received candidate line (`../../x` would write outside `--out`)."""
    allowed = {CORRECT, *categories, *(str(c.get("classification")) for c in categories.values())}
    known = candidate.classification in allowed or not categories  # a manifest naming none: the id rule alone
    if not known or not is_file_safe_id(candidate.classification):
        raise UserError(f"{run_path / 'candidates.jsonl'}: candidate {candidate.id!r} has classification "
                        f"{candidate.classification[:80]!r}, which is not a category of the run's taxonomy; nothing "
                        "was built (remove the line or pass the run's --taxonomy)")


def _row(candidate: Candidate, run: str, domain: str, category_name: str, *, reviewed: bool,
         reviewer: str, config_hash: str = "") -> dict[str, Any]:
    explanations = candidate.explanations or {}
    return {
        **{key: getattr(candidate, key) for key in PRMBENCH_FIELDS},
        "source_idx": candidate.idx,
        "id": candidate.id,
        "category": candidate.category,
        "category_name": category_name,
        "domain": domain,
        "subject": candidate.subject,
        "images": list(candidate.images),
        "trajectory_id": candidate.trajectory_id,
        "sample": candidate.sample,
        "run": run,
        "reviewed": reviewed,
        "reviewer": reviewer,
        "warnings": list(candidate.warnings),
        "explanations": [{"step": int(k), "text": v} for k, v in sorted(explanations.items(), key=lambda i: int(i[0]))],
        "ground_truth": candidate.ground_truth,
        "model": str(candidate.provenance.get("model") or ""),
        "provenance": json.dumps(candidate.provenance, ensure_ascii=False, sort_keys=True),
        "_config_hash": config_hash,
    }


def _source_row(candidate: Candidate) -> dict[str, Any]:
    """The source solution itself, as a correct control item (PRMBench's `correct`; ProcessBench label -1)."""
    source = candidate.source_trajectory()
    steps = list(source.steps)
    control = Candidate(
        original_question=source.question, modified_question=source.question, original_process=steps,
        modified_process=steps, modified_steps=[], error_steps=[], reason="", idx=candidate.idx,
        question=candidate.question, classification=CORRECT, id=f"{source.id}::{CORRECT}", category=CORRECT,
        trajectory_id=source.id, sample=0, provenance={"engine": "source"}, subject=source.subject,
        images=list(source.images), ground_truth=source.answer,
    )
    return _row(control, "", "control", "Correct", reviewed=True, reviewer="")


def _unique_ids(rows: list[dict[str, Any]]) -> None:
    """Split ids are unique: when runs over the same input give one id several rows, each of them gets
    `~<first 8 hex digits of its run's config_hash>` (so the suffix does not depend on the order the runs were
    given); if that still repeats (the same run given twice, or a copy of it), the build is refused."""
    by_id: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_id[row["id"]].append(row)
    for rows_of_id in by_id.values():
        if len(rows_of_id) > 1:
            for row in rows_of_id:
                row["id"] = f"{row['id']}~{row['_config_hash'][:8]}"
    seen: dict[str, str] = {}
    for row in rows:
        if row["id"] in seen:
            raise UserError(f"candidate {row['id']!r} is in runs {seen[row['id']]!r} and {row['run']!r} made with "
                            "the same configuration (the same run given twice, or a copy of it); give each run once")
        seen[row["id"]] = row["run"]
    for row in rows:
        del row["_config_hash"]


def _unique_idx(rows: list[dict[str, Any]]) -> None:
    """PRMBench keeps only the first record per (category, idx): later candidates of one source get `_2`, `_3`, …"""
    seen: Counter = Counter()
    for row in sorted(rows, key=lambda r: (r["classification"], r["source_idx"], r["trajectory_id"], r["sample"],
                                           r["run"], r["id"])):
        seen[(row["classification"], row["source_idx"])] += 1
        count = seen[(row["classification"], row["source_idx"])]
        row["idx"] = row["source_idx"] if count == 1 else f"{row['source_idx']}_{count}"


def assign_splits(rows: list[dict[str, Any]], *, by: str, test_size: float | None, seed: int) -> dict[str, list]:
    """Rows per split: one split per category, or train/test by source trajectory (no source in both)."""
    splits: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ordered = sorted(rows, key=lambda r: (r["category"], r["trajectory_id"], r["sample"], r["run"], r["id"]))
    for row in ordered:
        if by == "category":
            splits[row["category"]].append(row)
        else:
            test = _stable_unit(seed, row["trajectory_id"]) < (test_size or 0.0)
            splits["test" if test else "train"].append(row)
    clash = set(splits) & set(EXPORT_DIRS)
    if clash:
        raise UserError(f"split name {sorted(clash)[0]!r} clashes with an export directory; rename the category")
    return dict(sorted(splits.items()))


def _without(rows: list[dict[str, Any]], dropped: list[Any], report: BuildReport | None = None
             ) -> list[dict[str, Any]]:
    """`rows` less the dropped ones (by id: split ids are unique); with `report`, the drops are recorded there."""
    if report is not None:
        report.dropped.extend(dropped)
    gone = {d.id for d in dropped}
    return [row for row in rows if row["id"] not in gone]


def _staging_dir(out: Path) -> Path:
    """A new empty directory beside `out` (a resolved path; the same file system, so a rename moves it); UserError
    if none can be made."""
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        while True:
            staging = parent / f".{out.name}.building-{secrets.token_hex(4)}"
            try:
                staging.mkdir()  # a plain mkdir, so the split gets the user's usual permissions
                return staging
            except FileExistsError:
                continue
    except OSError as exc:
        raise UserError(f"{out}: cannot create the split beside it in {parent} ({exc.strerror or exc}); choose a "
                        "writable --out") from None


def _move_into_place(staging: Path, out: Path) -> None:
    """Rename `staging` to `out`; an existing `out` is renamed aside first and removed once the new one is in.

    Between the two renames `out` is briefly absent; if the second rename fails the old one is put back. An
    existing empty `out` is kept (it may be the current directory, or have permissions of its own): the staged
    entries are renamed into it, and back out if one fails.
    """
    if not out.exists():
        os.rename(staging, out)
        return
    if not any(out.iterdir()):
        moved: list[Path] = []
        try:
            for entry in sorted(staging.iterdir(), key=lambda p: p.name == "README.md"):  # the card last
                os.rename(entry, out / entry.name)
                moved.append(entry)
        except OSError:
            for entry in moved:
                os.rename(out / entry.name, entry)
            raise
        return
    old = staging.with_name(staging.name.replace(".building-", ".replaced-"))
    os.rename(out, old)
    try:
        os.rename(staging, out)
    except OSError:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)


def build(run_dirs: list[str | Path], out: str | Path, *, by: str = "category", test_size: float | None = None,
          seed: int = 0, include_unreviewed: bool = False, include_sources: bool = False, overwrite: bool = False,
          license: str = "other", command: list[str] | None = None, push_to_hub: str | None = None,
          taxonomy: str | Path | None = None, require: str | Iterable[str] | None = None,
          dedup_threshold: float | None = None, decontaminate: Iterable[str | Path] = (),
          decontaminate_field: str | None = None, require_audit_clean: bool = False) -> BuildReport:
    """Write a split directory from run directories; see README "Benchmark splits".

    `require` keeps only candidates with those `inject verify` verdicts; `decontaminate` (benchmark files) drops
    candidates whose question is in them; `dedup_threshold` (None: off) drops near-duplicates within each split
    (`dedup.py`). What each left out is counted in the card.
    """
    import datasets

    from injector.curate.card import dataset_card

    datasets.disable_progress_bars()  # the command prints its own one-line summary
    out = Path(out)
    if by not in ("category", "train-test"):
        raise UserError(f"--by {by!r}: choose category or train-test")
    if by == "train-test" and not (test_size and 0 < test_size < 1):
        raise UserError("--by train-test needs --test-size between 0 and 1, e.g. --test-size 0.2")
    if dedup_threshold is not None and not 0 < dedup_threshold <= 1:
        raise UserError(f"--dedup-threshold {dedup_threshold}: give a Jaccard similarity in (0, 1], e.g. 0.9")
    if out.exists() and any(out.iterdir()) and not overwrite:
        raise UserError(f"{out} is not empty; choose another --out or pass --overwrite")
    report = BuildReport(out_dir=out, required=required_verdicts(require), dedup_threshold=dedup_threshold,
                         require_audit_clean=require_audit_clean)
    benchmark = None
    if decontaminate:
        from injector.triage.dedup import read_benchmarks

        report.benchmark_files = [str(path) for path in decontaminate]
        benchmark = read_benchmarks(decontaminate, decontaminate_field)  # a bad file stops the build first
        report.benchmark_questions = benchmark.count
    # Every row is read and checked before anything is written.
    rows = collect_rows(run_dirs, include_unreviewed=include_unreviewed, include_sources=include_sources,
                        report=report, taxonomy=taxonomy, require=report.required)
    if not rows:
        left_out = (" or --require" if report.left_out_by_verdict else "") + (
            " or --require-audit-clean" if report.left_out_by_audit else "")
        raise UserError(f"no accepted candidates to build from{left_out}: review the run first (`inject review "
                        "RUN_DIR`), or pass --include-unreviewed")
    if benchmark is not None:
        from injector.triage.dedup import contaminated

        rows = _without(rows, contaminated(rows, benchmark), report)
    splits = assign_splits(rows, by=by, test_size=test_size, seed=seed)
    if dedup_threshold is not None:
        from injector.triage.dedup import near_duplicates

        dropped = [d for split_rows in splits.values() for d in near_duplicates(split_rows, dedup_threshold)]
        rows = _without(rows, dropped, report)
        splits = {name: kept for name, split_rows in splits.items() if (kept := _without(split_rows, dropped))}
    if not rows:
        raise UserError(f"all {len(report.dropped)} candidates were left out by --decontaminate or --dedup, so "
                        "nothing was built; check the benchmark files given, or raise --dedup-threshold")
    for row in rows:
        report.verdicts[(row["category"], row.pop("_verdict"))] += 1
        flagged = row.pop("_audit_flagged")
        if flagged is not None:
            report.audited[row["category"]] += 1
            report.audit_flagged[row["category"]] += flagged
    report.verdicts = Counter({key: n for key, n in report.verdicts.items() if key[1] is not None})
    report.rows = rows
    report.splits = {name: len(split_rows) for name, split_rows in splits.items()}
    features = split_features()
    dataset = datasets.DatasetDict({name: datasets.Dataset.from_list(split_rows, features=features)
                                    for name, split_rows in splits.items()})
    # Written into a directory beside --out and renamed into place at the end: a failure leaves no half split.
    target = out.resolve()  # `--out .` or a symlink to a split: replace the directory it names
    staging = _staging_dir(target)
    try:
        write_split(staging, dataset, splits, rows, dataset_card(report, license=license, command=command or []))
        _move_into_place(staging, target)
    except OSError as exc:
        where = f" writing {exc.filename}" if exc.filename else ""
        raise UserError(f"{out}: cannot write the split ({exc.strerror or exc}{where}); nothing was written and an "
                        "existing split is left as it was; free space or choose a writable --out") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if push_to_hub:
        dataset.push_to_hub(push_to_hub)
    return report
