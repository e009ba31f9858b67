"""`inject eval --compare A B`: the paired bootstrap difference A − B of two reports on the same solutions.

Both reports' predictions.jsonl give each solution's contribution (`vector`); a resample draws the same solutions
for both (whole solutions, within each category), so what varies between them is the scorer alone. A difference
whose interval contains 0 is "within noise".
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from injector.evaluate.bootstrap import BootstrapSettings, figures_function, paired_differences
from injector.util.errors import InputError
from injector.util.json_bounds import jsonl_lines

PREDICTIONS_FILE = "predictions.jsonl"
MAX_COUNT = 2**31
"""Largest count a contribution vector holds (steps or solutions of a split; bootstrap sums them as int64)."""


def _contributions(directory: Path) -> dict[str, tuple[str, str, list[int]]] | None:
    """Per solution id: its category, kind and vector; None when the report has none (an older report). A line
    that is no prediction as `inject eval` writes one (a report someone edited) is an `InputError` naming it."""
    path = directory / PREDICTIONS_FILE
    if not path.is_file():
        return None
    found, width = {}, None
    for number, record in jsonl_lines(path, "one prediction per line, as `inject eval` writes"):
        vector = record.get("vector") if isinstance(record, dict) else None
        if not isinstance(vector, list) or not all(_is_count(value) for value in vector) \
                or width not in (None, len(vector)):
            raise InputError(path, number, "`vector` must be a list of counts as long as every other line's; run "
                                           "that `inject eval` again")
        width = len(vector)
        found[str(record.get("id"))] = (str(record.get("category")), str(record.get("kind")), vector)
    return found


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_COUNT


def _paths(report: dict[str, Any]) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    if report.get("prmbench"):
        paths.append(("prmbench", "overall", "prmscore"))
        paths += [("prmbench", "per_category", category, "prmscore") for category in report["prmbench"]["per_category"]]
        if report["prmbench"].get("correct"):
            paths.append(("prmbench", "correct", "f1"))
    paths.append(("processbench", "f1"))
    if "average_f1" in report["processbench"]:
        paths.append(("processbench", "average_f1"))
    return paths


def _label(path: tuple[str, ...]) -> str:
    if path[:2] == ("prmbench", "overall"):
        return "PRMScore overall"
    if path[:2] == ("prmbench", "per_category"):
        return f"PRMScore {path[2]}"
    if path[:2] == ("prmbench", "correct"):
        return "F1 correct controls"
    return "ProcessBench F1 (subset average)" if path[-1] == "average_f1" else "ProcessBench F1 (pooled)"


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:+.3f}"


def paired_section(names: Sequence[str], reports: Sequence[dict[str, Any]], directories: Sequence[Path],
                   settings: BootstrapSettings) -> list[str]:
    """Markdown lines: the paired differences of two reports, or one line saying why there are none."""
    if len(reports) != 2:
        return []
    a, b = (_contributions(directory) for directory in directories)
    if a is None or b is None:
        return ["", "No paired difference: a report lacks the per-solution contributions (re-run `inject eval`)."]
    widths = [{len(vector) for _, _, vector in contributions.values()} for contributions in (a, b)]
    if set(a) != set(b) or reports[0].get("protocol") != reports[1].get("protocol") or widths[0] != widths[1]:
        return ["", "No paired difference: the two reports are not of the same solutions under the same protocol."]
    ids = sorted(a)
    categories = [a[item_id][0] for item_id in ids]
    kinds = {a[item_id][0]: a[item_id][1] for item_id in ids}
    figures_of = figures_function(kinds, str(reports[0].get("protocol") or "strict"),
                                  step_labels=reports[0].get("prmbench") is not None,
                                  subsets="average_f1" in reports[0]["processbench"])
    differences = paired_differences(categories, [a[item_id][2] for item_id in ids], [b[item_id][2] for item_id in ids],
                                     figures_of, _paths(reports[0]), settings)
    lines = ["", f"Paired difference {names[0]} − {names[1]} ({settings.level:.0%} bootstrap interval, "
                 f"{settings.resamples} resamples of the same solutions for both, seed {settings.seed}):", "",
             "| figure | difference | interval | |", "|---|---:|---:|---|"]
    for path, entry in differences.items():
        interval = entry["ci"]
        shown = "—" if interval is None else f"[{interval[0]:+.3f}, {interval[1]:+.3f}]"
        verdict = "" if entry["within_noise"] is None else "within noise" if entry["within_noise"] \
            else "beyond noise"
        lines.append(f"| {_label(path)} | {_cell(entry['difference'])} | {shown} | {verdict} |")
    return lines
