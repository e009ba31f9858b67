"""`inject stats --cues`: the surface-cue probe (`injector.triage.cues`) on the records stats reads, on a seeded
sample of at most `--cue-sample` solutions per category (`cue_sample.CueSample`: the rows `inject build`'s card
probes), one category at a time, and "overall" on a seeded sample of at most as many of those; `--cue-sample all`
probes every solution, as one probe, as stats did before it sampled."""
from __future__ import annotations

from typing import Any, Iterator

from injector.curate.cue_sample import CueSample

DEFAULT_SAMPLE = 5000
"""Solutions probed per category by default: what `inject build`'s card probes."""


class CueTap:
    """Every record stats reads is checked for what the probe needs (a bad one is an input error, sampled or not),
    and its probe view offered to the sample; only the sample's views are kept."""

    def __init__(self, per_category: int | None = DEFAULT_SAMPLE) -> None:
        self.sample = CueSample(per_category)
        self.read = 0
        self.dropped = 0
        """Error step numbers past the last step, over every record read (not only the sample's)."""

    def tap(self, records: Iterator[tuple[dict[str, Any], str]]) -> Iterator[tuple[dict[str, Any], str]]:
        from injector.triage.cues import cue_record

        for record, status in records:
            self.read += 1
            view = cue_record(record, status, self.read)
            if view is not None:
                self.dropped += view["outside"]
                # The sampling key: a run's or a split's row id (the same rows the card samples), else PRMBench's idx.
                row_id = record.get("id") if record.get("id") is not None else record.get("idx")
                self.sample.offer(row_id, view["category"], view)
            yield record, status

    def report(self) -> dict[str, Any]:
        """`cue_report` on the sample, with how many solutions each category's probe read of how many
        (`per_category[ID]["sample"]`, `overall["sample"]`) and the cap (`sample_per_category`; None: every one)."""
        from injector.triage.cues import cue_report

        per_category = self.sample.per_category
        rows = self.sample.rows()
        if per_category is None:
            report = cue_report(rows)
            with_errors = sum(1 for row in rows if row["error_steps"])
            report["overall"]["sample"] = {"records": with_errors, "of": with_errors}
        else:
            report = cue_report(rows, overall_sample=per_category)
            report["overall"]["dropped_error_steps"] = self.dropped
        for category, drawn in self.sample.drawn().items():
            report["per_category"][category]["sample"] = drawn
        report["sample_per_category"] = per_category
        return report


def add_cue_figures(stats: dict[str, Any], report: dict[str, Any]) -> None:
    """The probe's report under "cues", and its three AUCs as each category's (and the total's) columns."""
    stats["cues"] = report
    for category, row in stats["categories"].items():
        _cue_columns(row, report["per_category"].get(category, {}))
    _cue_columns(stats["total"], report["overall"])


def _cue_columns(row: dict[str, Any], probed: dict[str, Any]) -> None:
    """The three probes' AUCs as a category's columns: words (`cue_auc`), position, length."""
    row["cue_auc"] = probed.get("auc")
    row["position_auc"] = (probed.get("position") or {}).get("auc")
    row["length_auc"] = (probed.get("length") or {}).get("auc")


def cue_notes(cues: dict[str, Any]) -> list[str]:
    """What was probed, why an AUC is missing, and the words that give error steps away, under the table."""
    overall = cues["overall"]
    lines = ["", f"cue AUC: ROC AUC of a bag-of-words model finding error steps from wording alone (total: over "
             f"{overall['n']} steps); pos AUC and len AUC: the same from the step's relative position or its length "
             f"alone; folds grouped by source problem (total: {overall.get('problems', 0)} problems); 0.5 = no cue; "
             "see README", _sample_line(cues)]
    for name, row in [("overall", overall), *cues["per_category"].items()]:
        if row.get("reason"):
            lines.append(f"  {name}: no AUC ({row['reason']})")
        elif row.get("top"):
            lines.append(f"  {name}: " + ", ".join(word for word, _ in row["top"][:6]))
    return lines


def _sample_line(cues: dict[str, Any]) -> str:
    """How many solutions the probes read of how many: the categories sampled, and the total's sample."""
    per_category = cues.get("sample_per_category")
    total = cues["overall"].get("sample") or {"records": 0, "of": 0}
    if per_category is None:
        return f"  probed: every solution (--cue-sample all); total on all {total['of']} with an error step"
    sampled = {name: row["sample"] for name, row in cues["per_category"].items()
               if row.get("sample", {}).get("records", 0) < row.get("sample", {}).get("of", 0)}
    which = ", ".join(f"{name} {drawn['records']} of {drawn['of']}" for name, drawn in sampled.items())
    line = (f"  probed: at most {per_category} solutions per category, a seeded sample where it has more "
            "(--cue-sample; the rows `inject build`'s card probes): "
            + (f"{which}, other categories whole" if sampled else "every category whole"))
    if total["records"] < total["of"]:
        return line + (f"; total on a seeded sample of {total['records']} of the {total['of']} probed solutions "
                       "with an error step")
    return line + f"; total on all {total['of']} probed solutions with an error step"
