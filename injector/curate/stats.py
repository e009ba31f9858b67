"""`inject stats`: what a run, a split or a PRMBench-format file holds, per category — counts, reject reasons,
lengths, error steps and where they sit, answer changes, tokens and cost, and (`--cues`) the surface-cue probe — as
a table, JSON, or PNG plots."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Iterator

from injector.curate.card import error_steps_inside, record_answer_changed, relative_error_position
from injector.curate.rows import CORRECT
from injector.curate.stats_totals import Totals
from injector.util.money import money
from injector.util.errors import InputError, UserError
from injector.util.json_bounds import jsonl_lines, loads_bounded
from injector.sources.labelled import check_prmbench_fields
from injector.records.directory import RunDirectory
from injector.records.jsonl import read_jsonl_numbered, read_records
from injector.records.models import Candidate, Rejection

log = logging.getLogger("injector")



def iter_records(path: Path, taxonomy: Any = None) -> Iterator[tuple[dict[str, Any], str]]:
    """(record, status) for every candidate and reject of a run directory, every row of a split directory (status
    `accepted` for rows reviewers accepted, else `unreviewed`; each row also has `in_split` true), or every record
    of a PRMBench-format JSONL file or a directory of such files (status `in_split`; PRMBench's `classification`
    mapped to our category id), one at a time. Each record carries `_where`, (file, line) for messages. A run
    directory's lines that are not records are skipped with a warning naming FILE:LINE."""
    if path.is_dir() and ((path / "candidates.jsonl").exists() or (path / "manifest.json").exists()):
        run_dir = RunDirectory(path)
        decisions: dict[str, Any] = {}
        if (path / "review.sqlite").exists():
            from injector.curate.review.store import ReviewStore

            decisions = ReviewStore(path).latest()
        for number, candidate in run_dir.numbered_candidates():
            decision = decisions.get(candidate.id)
            status = "unreviewed" if decision is None else (
                "accepted" if decision.decision == "accept" else "rejected_by_reviewer")
            yield {**_declared(candidate), "_where": (run_dir.candidates_path, number)}, status
        for number, reject in read_records(run_dir.rejects_path, Rejection):
            yield {**_declared(reject), "_where": (run_dir.rejects_path, number)}, "rejected_by_validation"
        return
    if path.is_dir() and (path / "jsonl").is_dir():
        for split in sorted((path / "jsonl").glob("*.jsonl")):
            for number, row in read_jsonl_numbered(split):
                if not isinstance(row, dict) or not isinstance(row.get("category"), str):
                    raise InputError(str(split), number, "not a split row (an object with a category); use a split "
                                     "directory written by `inject build`")
                row["provenance"] = _provenance_of(row.get("provenance"))
                row["in_split"] = True
                # `reviewed` is what build recorded: a reviewer accepted the row, or it came unreviewed; correct
                # controls (source solutions) were never reviewed and are counted apart.
                status = ("correct_control" if row["category"] == CORRECT
                          else "accepted" if row.get("reviewed") else "unreviewed")
                yield {**row, "_where": (split, number)}, status
        return
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    if not files or not path.exists():
        raise UserError(f"{path}: neither a run directory (candidates.jsonl), a split directory (jsonl/), nor "
                        "PRMBench-format JSONL (a file, or a directory of .jsonl files); pass what `inject run` "
                        "or `inject build` wrote, or a PRMBench file")
    by_classification = _classifications(taxonomy)
    for file in files:
        for record in _prmbench_records(file, by_classification):
            yield {**record, "in_split": True}, "in_split"


def load_records(path: Path, taxonomy: Any = None) -> list[tuple[dict[str, Any], str]]:
    return list(iter_records(path, taxonomy))  # every record of `iter_records`, in a list


def _declared(record: Candidate | Rejection) -> dict[str, Any]:
    """A record's declared fields (checked when it was read); extra keys a received file may add are left out."""
    return record.model_dump(include=set(type(record).model_fields))


def _provenance_of(text: Any) -> dict[str, Any]:
    """A split row's provenance (JSON text, as build writes it) as an object; {} for anything else."""
    try:
        value = loads_bounded(text) if isinstance(text, str) and text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _classifications(taxonomy: Any) -> dict[str, str]:
    from injector.taxonomy import Taxonomy

    taxonomy = taxonomy or Taxonomy.load()
    return {category.classification: category.id for category in taxonomy.categories}


def _prmbench_records(path: Path, by_classification: dict[str, str]) -> Iterator[dict[str, Any]]:
    """The records of one PRMBench-format file, each checked for the fields the numbers need."""
    for number, record in jsonl_lines(path, "each line must be one PRMBench-format record"):
        check_prmbench_fields(record, path, number)
        classification = record["classification"]
        yield {**record, "category": by_classification.get(classification, classification),
               "_where": (path, number)}


def _flat(record: dict[str, Any], status: str, codes: list[str]) -> dict[str, Any]:
    """One candidate or reject as a row: category, status, codes, steps, error steps and position, whether the
    final answer changed, tokens, cost."""
    provenance = _mapping(record.get("provenance"))  # free-form: a received file may hold anything there
    usage = _mapping(provenance.get("usage"))
    tokens = sum(value for key, value in usage.items() if key in ("prompt_tokens", "completion_tokens")
                 and isinstance(value, int) and not isinstance(value, bool))
    recorded = provenance.get("cost")
    cost = float(recorded) if isinstance(recorded, (int, float)) and not isinstance(recorded, bool) else None
    has_steps = "modified_process" in record
    return {
        "category": record["category"],
        "status": status,
        "in_split": bool(record.get("in_split")),
        "codes": codes,
        "steps": len(record["modified_process"]) if has_steps else None,
        "position": relative_error_position(record) if has_steps else None,
        "error_steps": len(error_steps_inside(record)) if has_steps else None,
        "answer_changed": record_answer_changed(record) if has_steps else None,
        "tokens": tokens,
        "cost": cost,
        "cost_known": cost is not None or provenance.get("engine") in ("offline", "source"),
        # Whether the step audit recorded a flag on the candidate (`Candidate.step_audit`); None: not audited.
        "audit_flagged": bool(audit.get("findings")) if isinstance(audit := record.get("step_audit"), dict) else None,
    }


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _category_names(path: Path, from_rows: dict[str, dict[str, str]], taxonomy: Any) -> dict[str, dict]:
    """Name and domain per category: from `taxonomy` (the user's `--taxonomy`) where it has the category, else
    from the run's manifest or the split's rows (`from_rows`; read as data; nothing of the run is imported)."""
    names: dict[str, dict[str, str]] = {}
    if path.is_dir() and (path / "manifest.json").exists():
        try:
            recorded = RunDirectory(path).manifest_categories()
        except UserError as exc:  # the numbers do not need the names
            log.warning("%s; categories are shown without their names", exc)
            recorded = {}
        names.update({cid: {"name": c.get("name", ""), "domain": c.get("domain", "")} for cid, c in recorded.items()})
    names = {**from_rows, **names}  # the manifest's name first
    if taxonomy is not None:
        for category in taxonomy.categories:
            names[category.id] = {"name": category.name, "domain": category.domain}
    return names


class _Streamed:
    """One pass over the records: each one's numbers are added to its category's totals (`Totals`) and the names
    rows carry are noted; the record itself is dropped (the cue probe, with `cues`, keeps its sample's views)."""

    def __init__(self) -> None:
        self.totals: dict[str, Totals] = {}
        self.names: dict[str, dict[str, str]] = {}

    def tap(self, records: Iterator[tuple[dict[str, Any], str]]) -> Iterator[tuple[dict[str, Any], str]]:
        for record, status in records:
            if record.get("category_name") and record["category"] not in self.names:
                self.names[record["category"]] = {"name": record["category_name"],
                                                  "domain": record.get("domain") or ""}
            row = _flat(record, status, record.get("codes", []) if status == "rejected_by_validation" else [])
            self.totals.setdefault(record["category"], Totals()).add(row)
            yield record, status

    def overall(self) -> Totals:
        """Every category's totals added up (the same figures as one `Totals` given every record)."""
        overall = Totals()
        for totals in self.totals.values():
            overall.merge(totals)
        return overall


def compute_stats(path: str | Path, *, cues: bool = False, cue_sample: int | None = 5000,
                  taxonomy: str | Path | None = None) -> dict[str, Any]:
    """Per-category numbers (and totals) of a run or split directory or PRMBench-format JSONL, summed as the
    records are read; with `cues`, also the surface-cue probe (`injector.triage.cues`) under "cues" and as each category's
    `cue_auc`, on a seeded sample of at most `cue_sample` solutions per category (None: every one; see
    `stats_cues`). Each category also gets its `name` and `domain` (from `taxonomy`, a bundled name or a YAML path,
    when given, else as the run recorded them)."""
    from injector.curate.stats_cues import CueTap
    from injector.taxonomy import Taxonomy

    path = Path(path)
    loaded_taxonomy = Taxonomy.load(taxonomy) if taxonomy is not None else None
    streamed = _Streamed()
    records = streamed.tap(iter_records(path, loaded_taxonomy))
    probe = CueTap(cue_sample) if cues else None
    if probe is not None:
        records = probe.tap(records)
    all(True for _ in records)  # the pass itself: the rows (and the probe's sample) are what is kept
    names = _category_names(path, streamed.names, loaded_taxonomy)
    result: dict[str, Any] = {"path": str(path), "categories": {}}
    for category, totals in sorted(streamed.totals.items()):
        result["categories"][category] = {**names.get(category, {"name": "", "domain": ""}), **totals.summary()}
    result["total"] = streamed.overall().summary()
    from injector.triage.verdicts import verdict_counts

    verdicts = verdict_counts(path)
    if verdicts is not None:
        result["verdicts"] = verdicts
    if verdicts is not None or result["total"]["audit_checked"]:
        from injector.triage.step_audit.routing import routing_agreement, run_routing

        result["routing"] = routing_agreement(run_routing(path))
    if path.is_dir():
        from injector.curate.calibration import review_figures

        if (reviews := review_figures([path])) is not None:
            result["reviews"] = reviews
        from injector.curate.funnel import funnel

        if (figures := funnel([path])) is not None:
            result["funnel"] = figures.model_dump()
    if probe is not None:
        from injector.curate.stats_cues import add_cue_figures

        add_cue_figures(result, probe.report())
    return result


def stats_table(stats: dict[str, Any]) -> str:
    header = (f"{'category':22} {'records':>7} {'accepted':>8} {'rev.rej':>7} {'unrev.':>6} {'val.rej':>7} "
              f"{'in split':>8} {'steps':>6} {'err.st':>6} {'err.pos':>7} {'ans.chg':>7} {'tokens':>9} "
              f"{'cost':>10} {'$/cand.':>9}")
    with_cues = "cues" in stats
    lines = [header + (f" {'cue AUC':>7} {'pos AUC':>7} {'len AUC':>7}" if with_cues else "")]
    for name, row in [*stats["categories"].items(), ("total", stats["total"])]:
        cost = money(row["cost"])
        lines.append(
            f"{name:22} {row['records']:7d} {row['accepted']:8d} {row['rejected_by_reviewer']:7d} "
            f"{row['unreviewed']:6d} {row['rejected_by_validation']:7d} {row['in_split']:8d} "
            f"{_show(row['mean_steps']):>6} {_show(row['mean_error_steps']):>6} "
            f"{_show(row['mean_error_position']):>7} {_show(row['answer_changed_share']):>7} {row['tokens']:9d} "
            f"{cost:>10} {money(row.get('cost_per_candidate'), '-'):>9}"
            + (f" {_show(row.get('cue_auc')):>7} {_show(row.get('position_auc')):>7} "
               f"{_show(row.get('length_auc')):>7}" if with_cues else ""))
    total = stats["total"]
    candidates = total["records"] - total["rejected_by_validation"]
    if total["answer_checked"] < candidates:
        lines += ["", f"ans.chg: share whose final answer changed, among the {total['answer_checked']} of "
                  f"{candidates} solutions where both final answers were found (\\boxed{{}} or `# Answer`)"]
    if total.get("correct_control"):
        lines += ["", f"correct controls: {total['correct_control']} (source solutions, not reviewed)"]
    lines += _audit_lines(stats)
    if "verdicts" in stats:
        lines += _verdict_lines(stats["verdicts"])
    if "routing" in stats:
        from injector.triage.step_audit.routing import routing_lines

        lines += routing_lines(stats["routing"])
    if "funnel" in stats:
        from injector.curate.funnel import funnel_lines

        lines += funnel_lines(stats["funnel"])
    if with_cues:
        from injector.curate.stats_cues import cue_notes

        lines += cue_notes(stats["cues"])
    if "reviews" in stats:
        from injector.curate.calibration import review_lines

        lines += review_lines(stats["reviews"])
    if stats["total"]["reject_codes"]:
        lines += ["", "reject codes: " + _codes(stats["total"]["reject_codes"])]
        lines += [f"  {name}: {_codes(row['reject_codes'])}" for name, row in stats["categories"].items()
                  if row["reject_codes"]]
    if any(row.get("cost_per_candidate") is not None for row in stats["categories"].values()):
        lines += ["", "$/cand.: dollars per candidate that passed validation, the rejects' cost included"]
    return "\n".join(lines)


def _audit_lines(stats: dict[str, Any]) -> list[str]:
    """Flagged / audited candidates per category (the step audit `inject run` recorded), when any was audited."""
    rows = [*stats["categories"].items(), ("total", stats["total"])]
    if not stats["total"].get("audit_checked"):
        return []
    return ["", "step audit (flagged / audited candidates): " + ", ".join(
        f"{name} {row['audit_flagged']}/{row['audit_checked']}" for name, row in rows if row.get("audit_checked"))]


def _codes(codes: dict[str, int]) -> str:
    return ", ".join(f"{code} {n}" for code, n in codes.items())


def _verdict_lines(verdicts: dict[str, dict[str, int]]) -> list[str]:
    """The blind judge's verdicts per category (`inject verify`), as a table under the main one."""
    from injector.triage.verdicts import verdict_rank

    names = sorted({v for row in verdicts.values() for v in row}, key=verdict_rank)
    widths = {n: max(5, len(n)) for n in names}
    lines = ["", "verdicts (inject verify):", f"{'category':22}" + "".join(f" {n:>{widths[n]}}" for n in names)]
    for category, row in [*verdicts.items(), ("total", {n: sum(r.get(n, 0) for r in verdicts.values())
                                                          for n in names})]:
        lines.append(f"{category:22}" + "".join(f" {row.get(n, 0):>{widths[n]}d}" for n in names))
    return lines


def _show(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"
