"""`inject stats`: what a run or a split holds, per category — counts, reject reasons, lengths, where the errors
sit, tokens and cost — as a table, JSON, or PNG plots."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .card import relative_error_position
from .errors import UserError
from .records import read_jsonl

STATUSES = ("accepted", "rejected_by_reviewer", "unreviewed", "rejected_by_validation", "in_split")


def _records(path: Path) -> list[dict[str, Any]]:
    """One flat record per candidate or reject: category, status, codes, steps, error position, tokens, cost."""
    if (path / "candidates.jsonl").exists():
        decisions: dict[str, Any] = {}
        if (path / "review.sqlite").exists():
            from .review.store import ReviewStore

            decisions = ReviewStore(path).latest()
        rows = []
        for candidate in read_jsonl(path / "candidates.jsonl"):
            decision = decisions.get(candidate["id"])
            status = "unreviewed" if decision is None else (
                "accepted" if decision.decision == "accept" else "rejected_by_reviewer")
            rows.append(_flat(candidate, status, []))
        rows += [_flat(reject, "rejected_by_validation", reject.get("codes", []))
                 for reject in read_jsonl(path / "rejects.jsonl")]
        return rows
    if (path / "jsonl").is_dir():
        rows = []
        for split in sorted((path / "jsonl").glob("*.jsonl")):
            for row in read_jsonl(split):
                row["provenance"] = json.loads(row.get("provenance") or "{}")
                rows.append({**_flat(row, "in_split", []), "name": row.get("category_name"),
                             "domain": row.get("domain")})
        return rows
    raise UserError(f"{path}: neither a run directory (candidates.jsonl) nor a split directory (jsonl/); "
                    "pass what `inject run` or `inject build` wrote")


def _flat(record: dict[str, Any], status: str, codes: list[str]) -> dict[str, Any]:
    provenance = record.get("provenance") or {}
    usage = provenance.get("usage") or {}
    has_steps = "modified_process" in record
    return {
        "category": record["category"],
        "status": status,
        "codes": codes,
        "steps": len(record["modified_process"]) if has_steps else None,
        "position": relative_error_position(record) if has_steps else None,
        "tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
        "cost": provenance.get("cost"),
        "cost_known": provenance.get("cost") is not None or provenance.get("engine") in ("offline", "source"),
    }


def _category_names(path: Path, records: list[dict[str, Any]], taxonomy: str | Path | None) -> dict[str, dict]:
    """Name and domain per category: from `taxonomy` (the user's `--taxonomy`) where it has the category, else
    from the run's manifest or the split's rows (read as data; nothing of the run is imported)."""
    names: dict[str, dict[str, str]] = {}
    manifest = path / "manifest.json"
    if manifest.exists():
        try:
            recorded = json.loads(manifest.read_text(encoding="utf-8")).get("categories") or {}
            names.update({cid: {"name": str(c.get("name", "")), "domain": str(c.get("domain", ""))}
                          for cid, c in recorded.items() if isinstance(c, dict)})
        except (OSError, ValueError, AttributeError):
            pass  # the numbers do not need the names
    for record in records:
        if record.get("name") and record["category"] not in names:
            names[record["category"]] = {"name": record["name"], "domain": record.get("domain") or ""}
    if taxonomy is not None:
        from .taxonomy import Taxonomy

        for category in Taxonomy.load(taxonomy).categories:
            names[category.id] = {"name": category.name, "domain": category.domain}
    return names


def compute_stats(path: str | Path, taxonomy: str | Path | None = None) -> dict[str, Any]:
    """Per-category numbers (and totals) of a run or split directory, computed with polars.

    Each category also gets its `name` and `domain` (from `taxonomy` when given, else as the run recorded them).
    """
    import polars as pl

    records = _records(Path(path))
    names = _category_names(Path(path), records, taxonomy)
    for record in records:  # names are per category, not columns of the frame
        record.pop("name", None)
        record.pop("domain", None)
    frame = pl.DataFrame(records, schema={
        "category": pl.Utf8, "status": pl.Utf8, "codes": pl.List(pl.Utf8), "steps": pl.Int64,
        "position": pl.Float64, "tokens": pl.Int64, "cost": pl.Float64, "cost_known": pl.Boolean,
    })
    result: dict[str, Any] = {"path": str(path), "categories": {}}
    for (category,), group in sorted(frame.group_by("category"), key=lambda item: item[0][0]):
        result["categories"][category] = {**names.get(category, {"name": "", "domain": ""}), **_summarize(group, pl)}
    result["total"] = _summarize(frame, pl)
    return result


def _summarize(group: Any, pl: Any) -> dict[str, Any]:
    status = dict(group.group_by("status").len().iter_rows())
    codes = group.select(pl.col("codes").explode()).drop_nulls().group_by("codes").len().sort(
        ["len", "codes"], descending=[True, False])
    positions = group["position"].drop_nulls()
    bins = [0] * 5
    for value in positions.to_list():
        bins[min(4, max(0, int((value - 1e-9) * 5)))] += 1
    known = bool(group["cost_known"].all()) if len(group) else True
    return {
        "records": len(group),
        **{name: int(status.get(name, 0)) for name in STATUSES},
        "reject_codes": dict(codes.iter_rows()),
        "mean_steps": _round(group["steps"].drop_nulls().mean()),
        "mean_error_position": _round(positions.mean()),
        "error_position_histogram": dict(zip(["0-0.2", "0.2-0.4", "0.4-0.6", "0.6-0.8", "0.8-1"], bins)),
        "tokens": int(group["tokens"].sum()),
        "cost": _round(group["cost"].drop_nulls().sum(), 6) if known else None,
    }


def _round(value: Any, digits: int = 3) -> float | None:
    return None if value is None else round(float(value), digits)


def stats_table(stats: dict[str, Any]) -> str:
    header = (f"{'category':22} {'records':>7} {'accepted':>8} {'rev.rej':>7} {'unrev.':>6} {'val.rej':>7} "
              f"{'in split':>8} {'steps':>6} {'err.pos':>7} {'tokens':>9} {'cost':>10}")
    lines = [header]
    for name, row in [*stats["categories"].items(), ("total", stats["total"])]:
        cost = "unknown" if row["cost"] is None else f"${row['cost']:.4f}"
        lines.append(
            f"{name:22} {row['records']:7d} {row['accepted']:8d} {row['rejected_by_reviewer']:7d} "
            f"{row['unreviewed']:6d} {row['rejected_by_validation']:7d} {row['in_split']:8d} "
            f"{_show(row['mean_steps']):>6} {_show(row['mean_error_position']):>7} {row['tokens']:9d} {cost:>10}")
    if stats["total"]["reject_codes"]:
        lines += ["", "reject codes: " + ", ".join(f"{c} {n}" for c, n in stats["total"]["reject_codes"].items())]
    return "\n".join(lines)


def _show(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def write_plots(stats: dict[str, Any], directory: str | Path) -> list[Path]:
    """Two PNGs: counts by category and status; first-error position histogram per category."""
    import matplotlib

    matplotlib.use("Agg")  # no display here
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    categories = list(stats["categories"])
    counts_path, positions_path = directory / "counts_by_category.png", directory / "error_positions.png"

    figure, axes = plt.subplots(figsize=(max(6, 1.2 * len(categories)), 4))
    bottom = [0] * len(categories)
    for status in STATUSES:
        values = [stats["categories"][c][status] for c in categories]
        if any(values):
            axes.bar(categories, values, bottom=bottom, label=status.replace("_", " "))
            bottom = [b + v for b, v in zip(bottom, values)]
    axes.set_ylabel("records")
    axes.set_title("Records by category and status")
    axes.legend(fontsize=8)
    axes.tick_params(axis="x", rotation=30)
    figure.tight_layout()
    figure.savefig(counts_path, dpi=100)
    plt.close(figure)

    figure, grid = plt.subplots(1, max(1, len(categories)), figsize=(max(6, 2.4 * len(categories)), 3),
                                sharey=True, squeeze=False)
    for axes, category in zip(grid[0], categories):
        histogram = stats["categories"][category]["error_position_histogram"]
        axes.bar(list(histogram), list(histogram.values()))
        axes.set_title(category, fontsize=9)
        axes.tick_params(axis="x", rotation=60, labelsize=7)
    grid[0][0].set_ylabel("candidates")
    figure.suptitle("First error step ÷ steps")
    figure.tight_layout()
    figure.savefig(positions_path, dpi=100)
    plt.close(figure)
    return [counts_path, positions_path]
