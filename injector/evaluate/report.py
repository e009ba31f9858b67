"""The report of `inject eval`: the figures (`compute_metrics`), and the directory they go to: `metrics.json`,
`metrics.md` (a Markdown table), `predictions.jsonl` (one line per solution) and plots; `compare` puts several
reports side by side. Each file is written beside its final name and renamed into place: never half-written."""
from __future__ import annotations

import json
import os
import tempfile
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from pydantic import ValidationError

from injector.records.jsonl import problem_of
from injector.util.errors import UserError, WriteFailed
from injector.util.version import __version__
from injector.evaluate.bootstrap import (BootstrapSettings, add_intervals, figures_function, strata_of,
                                         stratum_totals)
from injector.evaluate.columns import select
from injector.evaluate.paired import paired_section
from injector.evaluate.metrics import (CORRECT, DEV_FRACTION, EvalItem, Scores, error_detection_curve,
                                       in_dev_subset, item_vector)
from injector.evaluate.metrics import sweep_threshold
from injector.evaluate.protocols import PRMBENCH, STRICT, LabelRule
from injector.evaluate.report_file import ReportFile
from injector.evaluate.scorers import ScorerResult
from injector.util.json_bounds import loads_bounded

METRICS_FILE, TABLE_FILE, PREDICTIONS_FILE = "metrics.json", "metrics.md", "predictions.jsonl"
PLOT_FILES = ("per_category.png", "error_detection_pr.png")


@dataclass(frozen=True)
class Scoring:
    """How scores become figures: the label rule, the protocol, and the bootstrap (None: no intervals)."""

    rule: LabelRule
    protocol: str = STRICT
    bootstrap: BootstrapSettings | None = None


def _figures(items: Sequence[EvalItem], result: ScorerResult, scoring: Scoring,
             with_intervals: bool = False) -> dict[str, Any]:
    """The figures of `items` (and their intervals), from one pass over them: each one's VECTOR row goes into one
    array of ints and its category becomes a code (a list of ints and the category per item were ~150 bytes)."""
    names: dict[str, int] = {}
    kinds: dict[str, str] = {}
    codes, vectors = array("i"), array("i")
    labelled = 0
    for item in items:
        codes.append(names.setdefault(item.category, len(names)))
        kinds[item.category] = item.kind
        labelled += item.error_steps is not None
        vectors.extend(item_vector(item, result.scores, scoring.rule, scoring.protocol, result.redundancy_scores))
    figures_of = figures_function(kinds, scoring.protocol, step_labels=bool(codes) and labelled == len(codes),
                                  subsets=bool(codes) and not labelled)
    strata = strata_of(codes, list(names), vectors)
    figures = figures_of(stratum_totals(strata))
    if with_intervals and scoring.bootstrap is not None and codes:
        figures["bootstrap"] = add_intervals(figures, strata, figures_of, scoring.bootstrap)
    return figures


def compute_metrics(items: Sequence[EvalItem], result: ScorerResult, *, threshold: float,
                    sweep_metric: str | None = None, scoring: Scoring | None = None) -> dict[str, Any]:
    """metrics.json's figures: at `threshold` (or under `scoring`'s label rule), or (with `sweep_metric`) at the
    threshold that maximises that metric on the dev subset (a 20 % of items by a hash of their id), reported on the
    rest, with the dev figures beside; with `scoring.bootstrap`, an interval beside every reported figure."""
    scoring = scoring or Scoring(LabelRule("threshold", threshold))
    sweep = None
    scored = items
    if sweep_metric is not None:
        if scoring.rule.kind != "threshold":
            raise UserError(f"`sweep` chooses a threshold; it does not apply to `label_rule` {scoring.rule.text}")
        dev = select(items, lambda item: in_dev_subset(item.id))
        held_out = select(items, lambda item: not in_dev_subset(item.id))
        if sweep_metric == "prmscore" and any(item.error_steps is None for item in items):
            raise UserError("--sweep-metric prmscore needs step labels, and a ProcessBench file has only the first "
                            "error; use --sweep-metric processbench")
        best, value = sweep_threshold(dev, result.scores, sweep_metric)
        if not dev or not held_out or best is None:
            raise UserError(f"--sweep: the dev subset ({len(dev)} of {len(items)} solutions, chosen by a hash of "
                            f"their ids) gives no {sweep_metric} figure at any threshold, or leaves nothing held out; "
                            "evaluate a larger split, or give --threshold instead")
        scoring = Scoring(LabelRule("threshold", best), scoring.protocol, scoring.bootstrap)
        sweep = {"metric": sweep_metric, "dev_fraction": DEV_FRACTION, "threshold": best, "dev_value": value,
                 "dev": {"n_items": len(dev), **_figures(dev, result, scoring)},
                 "held_out": {"n_items": len(held_out)}}
        scored = held_out
    figures = _figures(scored, result, scoring, with_intervals=True)
    bootstrap = figures.pop("bootstrap", None)
    return {"threshold": scoring.rule.value if scoring.rule.kind == "threshold" else None,
            "label_rule": scoring.rule.text, "protocol": scoring.protocol, "validity": result.validity, **figures,
            "sweep": sweep, "bootstrap": bootstrap}


def prediction_lines(items: Sequence[EvalItem], result: ScorerResult, rule: LabelRule | float,
                     with_dev: bool, protocol: str = STRICT) -> Iterator[dict[str, Any]]:
    """One line per solution: its labels (1-based), its scores, what they predict under `rule`, and its
    contribution to the figures (`vector`, what `--compare` resamples). Made as they are written (`write_report`):
    held together they were ~1 KB a solution."""
    rule = rule if isinstance(rule, LabelRule) else LabelRule("threshold", rule)
    for item in items:
        scores = result.scores.get(item.id)
        flagged = None if scores is None else [k for k, ok in enumerate(rule.labels(scores), 1) if not ok]
        first = next((k for k in flagged or () if k <= len(item.steps)), None)
        line: dict[str, Any] = {
            "id": item.id, "category": item.category, "kind": item.kind, "n_steps": len(item.steps),
            "error_steps": None if item.error_steps is None else sorted(item.error_steps),
            "first_error": item.first_error, "valid": scores is not None,
            "step_scores": None if scores is None else list(scores),
            "predicted_error_steps": flagged, "predicted_first_error": first,
            "first_error_right": scores is not None and first == item.first_error,
            "vector": item_vector(item, result.scores, rule, protocol, result.redundancy_scores),
        }
        if item.id in result.redundancy_scores:
            line["redundancy_scores"] = list(result.redundancy_scores[item.id] or ())
        if with_dev:
            line["dev"] = in_dev_subset(item.id)
        line.update(result.details.get(item.id, {}))
        yield line


def scorer_name(scorer: dict[str, Any]) -> str:
    """A model's name, or a scores file's name."""
    return str(scorer.get("model") or Path(str(scorer.get("file") or scorer.get("kind"))).name)


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _cell(figures: dict[str, Any] | None, key: str) -> str:
    """A figure and its interval: `0.712 [0.690, 0.733]`; a PRMBench -1 is marked."""
    if figures is None or figures.get(key) is None:
        return "—"
    interval = (figures.get("ci") or {}).get(key)
    text = _number(figures[key]) + ("" if interval is None else f" [{interval[0]:.3f}, {interval[1]:.3f}]")
    return text + (" (no hit)" if key in figures.get("no_hit", ()) else "")


def _header(report: dict[str, Any]) -> list[str]:
    rule = report.get("label_rule") or f"threshold:{report['threshold']:g}"
    bootstrap = report.get("bootstrap")
    lines = [f"# inject eval: {scorer_name(report['scorer'])}", "",
             f"Split `{report['split']}`: {report['n_items']} solutions; protocol {report.get('protocol', STRICT)}; "
             f"label rule {rule}"
             + ("" if report["validity"] is None else f"; valid answers {report['validity']:.1%}")
             + ("" if report["sweep"] is None else
                f" (threshold swept on a {report['sweep']['dev_fraction']:.0%} dev subset of "
                f"{report['sweep']['dev']['n_items']} solutions for {report['sweep']['metric']}; figures below are "
                f"the held-out {report['sweep']['held_out']['n_items']})"), ""]
    if bootstrap:
        lines += [f"Brackets: {bootstrap['level']:.0%} bootstrap intervals ({bootstrap['resamples']} resamples of "
                  f"whole solutions within each category, seed {bootstrap['seed']}).", ""]
    lines += [f"Warning: {warning}" for warning in report.get("warnings", ())]
    return lines + ([""] if report.get("warnings") else [])


def _prmbench_rows(prmbench: dict[str, Any], accuracy: dict[str, Any], protocol: str) -> list[str]:
    lines = ["| category | solutions | invalid | steps | F1 | F1_neg | PRMScore | first-error accuracy |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]

    def row(label: str, figures: dict[str, Any], category: str | None) -> str:
        return (f"| {label} | {figures['n_items']} | {figures['n_invalid']} | {figures['n_steps']} | "
                f"{_cell(figures, 'f1')} | {_cell(figures, 'f1_neg')} | {_cell(figures, 'prmscore')} | "
                f"{_cell(accuracy.get(category) if category else None, 'accuracy')} |")

    lines.append(row("**overall**", prmbench["overall"], None))
    lines += [row(category, figures, category) for category, figures in prmbench["per_category"].items()]
    if prmbench["correct"] is not None:
        lines.append(row("correct originals (not pooled)", prmbench["correct"], CORRECT))
    lines += ["", "Multi-solution and correct originals: F1 alone (every step is correct, so F1_neg is "
                  "undefined). First-error accuracy: ProcessBench's per-solution accuracy in that category."]
    if protocol == PRMBENCH:
        lines += ["(no hit): a class with no true hit, whose F1 PRMBench writes as -1."]
    return lines + [""]


def _processbench_rows(processbench: dict[str, Any], subsets: bool) -> list[str]:
    lines = ["| " + ("subset" if subsets else "category") + " | solutions | acc_error | acc_correct | F1 |",
             "|---|---:|---:|---:|---:|"]
    for category, figures in processbench["per_category"].items():
        f1 = "undefined (both accuracies 0)" if figures.get("f1_undefined") else _cell(figures, "f1")
        lines.append(f"| {category} | {figures['n']} | {_cell(figures, 'acc_error')} | "
                     f"{_cell(figures, 'acc_correct')} | {f1} |")
    if subsets:
        lines.append(f"| **average over subsets** (the paper's figure) | | | | {_cell(processbench, 'average_f1')} |")
    pooled = "undefined (both accuracies 0)" if processbench.get("f1_undefined") else _cell(processbench, "f1")
    lines.append(f"| **pooled** over every solution | {processbench['n_error'] + processbench['n_correct']} | "
                 f"{_cell(processbench, 'acc_error')} | {_cell(processbench, 'acc_correct')} | {pooled} |")
    if not processbench["n_correct"]:
        lines += ["", "No correct solution in the split, so acc_correct and F1 are not defined: build the split with "
                  "`--include-sources` (each source solution once, as a correct control)."]
    return lines


def markdown_table(report: dict[str, Any]) -> str:
    """The report as Markdown: PRMBench's figures overall and per category, then ProcessBench's, each figure with
    its interval."""
    lines = _header(report)
    prmbench, processbench = report["prmbench"], report["processbench"]
    if prmbench is not None:
        lines += _prmbench_rows(prmbench, processbench["per_category"], report.get("protocol", STRICT))
    else:
        lines += ["No step labels (a ProcessBench file): PRMScore is not defined.", ""]
    lines += ["ProcessBench (first error step):", ""]
    lines += _processbench_rows(processbench, "average_f1" in processbench)
    return "\n".join(lines) + "\n"


def _write_atomically(path: Path, write: Callable[[Path], object]) -> None:
    """`write` a file beside `path`, then rename it into place: a reader sees the old file or the new, whole."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    temporary = Path(name)
    try:
        write(temporary)
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _write_lines(path: Path, lines: Iterable[dict[str, Any]]) -> None:
    """One JSON line per record, each written as it comes. A lone surrogate (an id JSON spelled `"\\ud800"`) has no
    UTF-8: inside a JSON string, backslashreplace writes it back as that same escape."""
    with path.open("w", encoding="utf-8", errors="backslashreplace") as handle:
        for line in lines:
            handle.write(json.dumps(line, ensure_ascii=False) + "\n")


def _write_text(path: Path, text: str) -> None:
    _write_atomically(path, lambda target: target.write_text(text, encoding="utf-8"))


def write_report_plots(report: dict[str, Any], items: Sequence[EvalItem], scores: Scores, out: Path) -> list[str]:
    """per_category.png (PRMScore, or first-error accuracy without step labels) and error_detection_pr.png (how
    precision and recall of finding error steps trade off over thresholds); [] with a note when matplotlib is
    missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    from injector.curate.palette import NEUTRAL

    written = []
    prmbench = report["prmbench"]
    if prmbench is not None:
        per_category = {category: figures["prmscore"] for category, figures in prmbench["per_category"].items()}
        what = "PRMScore (multi-solution: F1)"
    else:
        per_category = {category: figures["accuracy"]
                        for category, figures in report["processbench"]["per_category"].items()}
        what = "first-error accuracy"
    figure, axes = plt.subplots(figsize=(max(5.0, 0.8 * len(per_category) + 2), 4))
    names = list(per_category)
    axes.bar(names, [value or 0.0 for value in per_category.values()], color=NEUTRAL)
    axes.set_ylim(0, 1)
    axes.set_ylabel(what)
    axes.set_title(f"{what} per category, {report.get('label_rule') or report['threshold']}")
    plt.setp(axes.get_xticklabels(), rotation=40, ha="right")
    figure.tight_layout()
    _write_atomically(out / PLOT_FILES[0], lambda target: figure.savefig(target, format="png", dpi=100))
    plt.close(figure)
    written.append(PLOT_FILES[0])
    if prmbench is not None:
        grid = [k / 100 for k in range(101)]
        curve = [(point["recall"], point["precision"]) for point in error_detection_curve(items, scores, grid)]
        points = [(recall, precision) for recall, precision in curve if recall is not None and precision is not None]
        figure, axes = plt.subplots(figsize=(5, 4))
        axes.plot([recall for recall, _ in points], [precision for _, precision in points], marker=".", color=NEUTRAL)
        axes.set_xlim(0, 1.02)
        axes.set_ylim(0, 1.02)
        axes.set_xlabel("recall of error steps")
        axes.set_ylabel("precision of error steps")
        axes.set_title("Finding error steps, thresholds 0..1")
        figure.tight_layout()
        _write_atomically(out / PLOT_FILES[1], lambda target: figure.savefig(target, format="png", dpi=100))
        plt.close(figure)
        written.append(PLOT_FILES[1])
    return written


def write_report(out: str | Path, report: dict[str, Any], predictions: Iterable[dict[str, Any]],
                 items: Sequence[EvalItem], scores: Scores, *, plots: bool = True) -> list[str]:
    """Write the report directory; the names of the files written."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        _write_atomically(out / PREDICTIONS_FILE, lambda target: _write_lines(target, predictions))
        _write_text(out / TABLE_FILE, markdown_table(report))
        written = [PREDICTIONS_FILE, TABLE_FILE]
        if plots:
            written += write_report_plots(report, items, scores, out)
        # metrics.json last: its presence says the report is complete.
        _write_text(out / METRICS_FILE, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    except OSError as exc:
        raise WriteFailed(exc.filename or out, exc, "free space or choose a writable --out") from None
    return [*written, METRICS_FILE]


def write_comparison(out: str | Path, table: str) -> Path:
    """`--compare --out DIR`: the table as `DIR/comparison.md`, written beside and renamed into place."""
    path = Path(out) / "comparison.md"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_text(path, table)
    except OSError as exc:
        raise WriteFailed(exc.filename or path, exc, "free space or choose a writable --out") from None
    return path


def report_header(split: str, n_items: int, scorer: dict[str, Any]) -> dict[str, Any]:
    return {"split": split, "n_items": n_items, "scorer": scorer, "toolkit_version": __version__}


def read_report(path: str | Path) -> tuple[str, dict[str, Any]]:
    """A report's name (its directory) and its metrics.json; `path` is the directory or the file."""
    path = Path(path)
    file = path / METRICS_FILE if path.is_dir() else path
    try:
        report = loads_bounded(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # malformed, not UTF-8, or past the JSON limits
        raise UserError(f"{file}: not a readable `inject eval` report ({exc}); pass a directory `inject eval "
                        "--out` wrote") from None
    if not isinstance(report, dict) or "processbench" not in report or "prmbench" not in report:
        raise UserError(f"{file}: not an `inject eval` metrics.json (no prmbench / processbench sections)")
    try:  # every figure compare reads, there and of its type (a hand-edited file: a field missing, a list)
        ReportFile.model_validate(report)
    except ValidationError as exc:
        raise UserError(f"{file}: not an `inject eval` metrics.json ({problem_of(exc)}); pass a directory `inject "
                        "eval --out` wrote, or run that `inject eval` again") from None
    return (path.name if path.is_dir() else path.parent.name) or str(path), report


def compare(paths: Sequence[str | Path], settings: BootstrapSettings | None = BootstrapSettings()) -> str:
    """Several reports side by side, as a Markdown table: one column per report, one row per figure; for two
    reports of the same solutions (and `settings`), their paired bootstrap difference below."""
    reports = [read_report(path) for path in paths]
    names = [name for name, _ in reports]
    rows: list[tuple[str, list[Any]]] = [
        ("scorer", [scorer_name(r["scorer"]) for _, r in reports]),
        ("solutions", [f"{r.get('n_items')}" + (f" (held out {r['sweep']['held_out']['n_items']})" if r.get("sweep")
                                                else "") for _, r in reports]),
        ("threshold", [r["threshold"] for _, r in reports]),
        ("valid answers", [r["validity"] for _, r in reports]),
    ]

    def prm(key: str, category: str | None = None) -> list[Any]:
        values = []
        for _, report in reports:
            section = report["prmbench"]
            figures = None if section is None else section["overall"] if category is None \
                else section["per_category"].get(category)
            values.append(None if figures is None else figures[key])
        return values

    rows += [("PRMScore", prm("prmscore")), ("F1", prm("f1")), ("F1_neg", prm("f1_neg"))]
    categories = sorted({c for _, r in reports if r["prmbench"] for c in r["prmbench"]["per_category"]})
    rows += [(f"PRMScore {category}", prm("prmscore", category)) for category in categories]
    rows += [(f"ProcessBench {key}", [r["processbench"][key] for _, r in reports])
             for key in ("f1", "acc_error", "acc_correct")]
    lines = ["| | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for label, values in rows:
        cells = [_number(v) if isinstance(v, float) else "—" if v is None else str(v) for v in values]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    splits = {(r["split"], r.get("n_items"), (r.get("sweep") or {}).get("held_out", {}).get("n_items"))
              for _, r in reports}
    if len(splits) > 1:
        lines += ["", "Note: these reports are of different splits (or different parts of one); their figures are "
                      "not directly comparable."]
    elif settings is not None:
        directories = [Path(path) if Path(path).is_dir() else Path(path).parent for path in paths]
        lines += paired_section(names, [report for _, report in reports], directories, settings)
    return "\n".join(lines) + "\n"
