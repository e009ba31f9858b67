"""`inject stats --plots`: records by category and status, where the first error sits, the funnel per category
and a heatmap of reject code x category, all in the colours of `palette.py`."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from injector.curate.funnel import STAGES
from injector.curate.palette import HEATMAP, NEUTRAL, STAGE_COLOURS, STATUS_COLOURS
from injector.curate.stats_totals import STATUSES


def write_plots(stats: dict[str, Any], directory: str | Path) -> list[Path]:
    """PNGs: counts by category and status; first-error position histogram per category; the funnel and reject
    codes x category; every status in its `palette.py` colour."""
    import matplotlib

    matplotlib.use("Agg")  # no display here
    import matplotlib.pyplot as plt

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    categories = list(stats["categories"])
    counts_path, positions_path = directory / "counts_by_category.png", directory / "error_positions.png"

    figure, axes = plt.subplots(figsize=(max(6, 1.2 * len(categories)), 4))
    bottom = [0] * len(categories)
    stacked = [s for s in STATUSES if s != "in_split"]  # a split's rows are counted there already
    if not any(stats["categories"][c][s] for c in categories for s in stacked):
        stacked = ["in_split"]  # PRMBench files: nothing is known but that the rows are there
    for status in stacked:
        values = [stats["categories"][c][status] for c in categories]
        if any(values):
            axes.bar(categories, values, bottom=bottom, label=status.replace("_", " "), color=STATUS_COLOURS[status])
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
        axes.bar(list(histogram), list(histogram.values()), color=NEUTRAL)
        axes.set_title(category, fontsize=9)
        axes.tick_params(axis="x", rotation=60, labelsize=7)
    grid[0][0].set_ylabel("candidates")
    figure.suptitle("First error step ÷ steps")
    figure.tight_layout()
    figure.savefig(positions_path, dpi=100)
    plt.close(figure)
    return [counts_path, positions_path, *_funnel_plots(stats, directory, plt)]


def _funnel_plots(stats: dict[str, Any], directory: Path, plt: Any) -> list[Path]:
    """funnel.png (when `stats` has a funnel) and reject_codes.png (when any record was rejected); `plt` is
    matplotlib's pyplot with a file backend."""
    written = []
    if stats.get("funnel"):
        written.append(_funnel_plot(stats["funnel"], directory / "funnel.png", plt))
    codes = sorted({code for row in stats["categories"].values() for code in row.get("reject_codes", {})})
    if codes:
        written.append(_heatmap(stats, codes, directory / "reject_codes.png", plt))
    return written


def _funnel_plot(figures: dict[str, Any], path: Path, plt: Any) -> Path:
    rows = figures["categories"]
    figure, axes = plt.subplots(figsize=(max(6, 1.4 * len(rows) + 2), 4))
    width = 0.8 / len(STAGES)
    for k, stage in enumerate(STAGES):
        axes.bar([i + (k - 2) * width for i in range(len(rows))], [row[stage] for row in rows], width,
                 color=STAGE_COLOURS[stage], label=stage)
    axes.set_xticks(range(len(rows)), [row["category"] for row in rows], rotation=30, ha="right")
    axes.set_ylabel("items")
    axes.set_title(f"Funnel per category (accepted: {figures['consensus']})")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def _heatmap(stats: dict[str, Any], codes: list[str], path: Path, plt: Any) -> Path:
    categories = list(stats["categories"])
    counts = [[stats["categories"][c].get("reject_codes", {}).get(code, 0) for c in categories] for code in codes]
    figure, axes = plt.subplots(figsize=(max(5, 1.1 * len(categories) + 3), max(3, 0.4 * len(codes) + 1.5)))
    image = axes.imshow(counts, cmap=HEATMAP, aspect="auto")
    axes.set_xticks(range(len(categories)), categories, rotation=30, ha="right")
    axes.set_yticks(range(len(codes)), codes)
    peak = max(max(row) for row in counts) or 1
    for i, row in enumerate(counts):
        for j, n in enumerate(row):
            if n:
                axes.text(j, i, str(n), ha="center", va="center", fontsize=8,
                          color="white" if n > peak / 2 else "black")
    figure.colorbar(image, ax=axes, label="rejects")
    axes.set_title("Reject codes by category")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
