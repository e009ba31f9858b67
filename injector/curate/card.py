"""The dataset card (`SPLIT_DIR/README.md`, Hugging Face card format) of a built split."""
from __future__ import annotations

from collections import Counter
from typing import Any

import yaml

from injector.curate.card_figures import (POSITION_BINS, CardFigures, error_steps_inside, record_answer_changed,
                                          relative_error_position)
from injector.curate.cue_sample import CueSample
from injector.util.version import __version__

__all__ = ["dataset_card", "cue_sample", "error_steps_inside", "probe_cues", "record_answer_changed",
           "relative_error_position", "verdict_table"]


def _table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def dataset_card(report: Any, *, license: str, command: list[str]) -> str:
    """The card of the split `report` describes: its header, counts, acceptance, triage, models, error positions,
    what the categories produce, files, licence and the command that reproduces it."""
    figures = _figures_of(report)
    parts = [_front_matter(report, license), _counts_section(figures, report.splits),
             _acceptance_section(report, figures), *_triage_sections(report), _models_section(figures)]
    parts.extend(_positions_section(figures))
    cues, cue_note = figures.cues or _cue_figures(figures)
    parts.append(_production_lines(figures, cue_figures=(cues, cue_note)))
    if getattr(report, "reviews", None):
        from injector.curate.calibration import review_section

        parts.append(review_section(report.reviews))
    if getattr(report, "funnel", None):
        from injector.curate.funnel import funnel_section

        parts.append(funnel_section(report.funnel))
    parts.append(FILES_SECTION)
    parts.append(f"## Licence\n\n`{license}`. Check the licences of the source solutions (PRM800K: MIT; "
                 "PRMBench: Apache-2.0) and of the model outputs.\n")
    from injector.curate.reproduce import reproduce_section

    parts.append(reproduce_section(report, command, cues))
    return "\n".join(parts)


def _figures_of(report: Any) -> CardFigures:
    """The card's figures: those the build gathered while it wrote the rows (`report.figures`), else from
    `report.rows` (split rows, for a report made by hand)."""
    figures = getattr(report, "figures", None)
    if figures is None:
        figures = CardFigures.of((row.record() for row in report.rows), getattr(report, "cue_sample", None))
    figures.settle()
    return figures


FILES_SECTION = (
    "## Files\n\n- `parquet/<split>.parquet`, `jsonl/<split>.jsonl`, and the `datasets.save_to_disk` "
    "layout at the top (`load_from_disk`)\n- `prmbench/<classification>.jsonl`: exactly PRMBench's fields, "
    "unique `idx` per category, readable by PRMBench's evaluation\n- `processbench/<split>.jsonl`: "
    "ProcessBench's shape (`label` = 0-based first error step, -1 for none)\n- `judge/<split>.jsonl`: "
    "judge-training items (prompt = question + numbered steps; target = a verdict per step)\n"
    "- `projudge/<split>.jsonl`: ProJudgeBench's shape (`process_evaluation` = [step, \"1\"|\"0\", "
    "error type, explanation] per step)\n")


def _front_matter(report: Any, license: str) -> str:
    """The Hugging Face YAML header and the card's title."""
    header = {
        "license": license,
        "pretty_name": f"Process-error benchmark ({', '.join(sorted(report.splits))})",
        "tags": ["process-reward-model", "step-level-errors", "prmbench", "synthetic", "prm-injector"],
        "configs": [{"config_name": "default", "data_files": [
            {"split": name, "path": f"parquet/{name}.parquet"} for name in sorted(report.splits)]}],
    }
    return (f"---\n{yaml.safe_dump(header, sort_keys=False).strip()}\n---\n\n"
            f"# Process-error benchmark\n\nBuilt with prm-injector {__version__}: solutions known to be correct, "
            "with one injected error each (or a different correct solution), labelled by the toolkit from the "
            "text and checked by human reviewers.\n")


def _counts_section(figures: CardFigures, splits: dict[str, int]) -> str:
    """Rows per category (with its domain and how many were reviewed), per domain and per split."""
    return "## Counts\n\n" + _table(
        ["category", "domain", "rows", "reviewed"],
        [[c, figures.domain_of[c], n.rows, figures.reviewed[c]] for c, n in sorted(figures.categories.items())]
    ) + "\n\n" + _table(["domain", "rows"], [[d, n] for d, n in sorted(figures.domains.items())]) + "\n\n" + _table(
        ["split", "rows"], [[name, count] for name, count in sorted(splits.items())]) + "\n"


def _acceptance_section(report: Any, figures: CardFigures) -> str:
    """How many units became candidates, how many reviewers accepted, and why the rest were rejected."""
    made = report.candidates_seen + report.run_rejects
    reviewed = report.candidates_seen - report.unreviewed_left_out
    accepted_by_reviewers = figures.accepted_by_reviewers
    lines = [
        f"- units attempted: {made}; candidates that passed validation: {report.candidates_seen}"
        + (f" ({report.candidates_seen / made:.0%})" if made else ""),
        f"- reviewed: {reviewed}; accepted by reviewers: {accepted_by_reviewers}; rejected by reviewers: "
        f"{report.rejected_by_reviewer}" + (f" (acceptance {accepted_by_reviewers / reviewed:.0%})" if reviewed else ""),
        f"- unreviewed candidates left out: {report.unreviewed_left_out}",
    ]
    parts = ["## Acceptance\n\n" + "\n".join(lines) + "\n"]
    if report.reject_codes:
        parts.append("Validation and provider reject reasons (codes, from `rejects.jsonl`):\n\n" + _table(
            ["code", "count"], [[c, n] for c, n in report.reject_codes.most_common()]) + "\n")
    if report.reviewer_reasons:
        parts.append("Reviewer reject reasons:\n\n" + _table(
            ["reason", "count"], [[r, n] for r, n in report.reviewer_reasons.most_common()]) + "\n")
    return "\n".join(parts)


def _models_section(figures: CardFigures) -> str:
    """Rows per (engine, model, category, template, output mode), from each row's provenance."""
    used = figures.models
    table = "## Models and templates\n\n" + _table(
        ["engine", "model", "category", "template hash", "output mode", "rows"],
        [[*key, n] for key, n in sorted(used.items())]) + "\n"
    offline = sum(n for key, n in used.items() if key[0] == "offline")
    if offline:  # said where a reader of the split sees it, not only in our docs
        table += (f"\n**{offline} rows were made by the rule-based offline engine: smoke-test negatives, not "
                  "benchmark-grade.** Its errors come from a fixed repertoire and carry more surface cue (wording, "
                  "error position or step length) than PRMBench's GPT-4o records; measured in prm-injector's "
                  "docs/offline-engine-quality.md. Do not publish them as a benchmark.\n")
    return table


def _positions_section(figures: CardFigures) -> list[str]:
    """A histogram of where the first error sits, per category (none when no row has an error step)."""
    histogram = figures.histogram
    if not histogram:
        return []
    bins = [f"≤{b:.1f}" for b in POSITION_BINS]
    return ["## Error positions\n\nFirst error step ÷ number of steps (judges tend to do better on late "
            "errors; balance this across a benchmark):\n\n" + _table(
                ["category", *bins], [[c, *(h[b] for b in POSITION_BINS)] for c, h in
                                      sorted(histogram.items())]) + "\n"]


def cue_sample(rows: list[dict[str, Any]], per_category: int) -> list[dict[str, Any]]:
    """At most `per_category` rows of each category, chosen by a hash of their ids (the same rows on every
    machine), so the cue probe's cost stays flat however large the split; in their order (`CueSample`'s rule)."""
    sample = CueSample(per_category)
    for row in rows:
        sample.offer(row.get("id"), row["category"], row)
    return sample.rows()


def probe_cues(figures: CardFigures, rows: list[dict[str, Any]] | None = None) -> None:
    """The card's cue figures computed now and kept in `figures`, their sample released: a build probes once its
    rows are read, before it writes its tables, so the probe's memory and the writers' do not add up. `rows`: the
    sample's probe views (`cue_sample` of the split's rows, read back by the build), else the figures' own."""
    figures.cues = _cue_figures(figures, rows)
    figures.release_sample()


def _cue_figures(figures: CardFigures, rows: list[dict[str, Any]] | None = None) -> tuple[dict[str, Any] | None, str]:
    """The cue probe's report on the sample of the rows (`rows`, else those the figures kept; None when their
    `cue_sample` is None: `--no-cues`), and what the card says of it. "Over all categories" is probed on a seeded
    sample of at most `cue_sample` of the sampled rows (`cues.overall_records`), so the probe never holds more
    than one category's worth of counts, however many categories the split has."""
    sample = figures.cue_sample
    if sample is None:
        return None, " Cue AUC: not computed (`--no-cues`)."
    from injector.triage.cues import cue_report

    # The card shows AUCs, not the telling n-grams: top=0 spares each category the fit those need.
    cues = cue_report(figures.cue_rows() if rows is None else rows, overall_sample=sample, top=0)
    overall, note = cues["overall"], ""
    if overall["auc"] is not None:
        drawn = overall["sample"]
        note = (f"; over all categories {overall['auc']:.2f}, on " + (
            f"a seeded sample of {drawn['records']} of the {drawn['of']}" if drawn["records"] < drawn["of"]
            else f"all {drawn['of']}") + " sampled rows with an error step")
    note = (" Cue AUC: ROC AUC of a bag-of-words model that finds the error steps from wording alone (grouped "
            "5-fold cross-validation; 0.5 = no surface cue, 1 = the wording gives every error away; recipe in the "
            f"toolkit's README), on at most {sample} rows per category (a seeded sample){note}.")
    return cues, note


def _production_section(rows: list[dict[str, Any]], sample: int | None = 5000,
                        cue_figures: tuple[dict[str, Any] | None, str] | None = None) -> str:
    """Per category: how often the final answer changed, how many error steps, where the first one sits, and
    how well wording alone finds the error steps (the surface-cue probe, on a sample; none with `--no-cues`;
    `cue_figures`: what `_cue_figures` gave, when the card computed them already)."""
    return _production_lines(CardFigures.of(rows, sample), cue_figures)


def _production_lines(figures: CardFigures, cue_figures: tuple[dict[str, Any] | None, str] | None = None) -> str:
    """`_production_section` from the figures a build gathered."""
    cues, cue_note = cue_figures if cue_figures is not None else _cue_figures(figures)
    table, notes = [], []
    for category, mine in sorted(figures.categories.items()):
        positions = mine.positions
        cue = cues["per_category"].get(category) if cues else None
        if cue and cue.get("reason"):
            notes.append(f"- {category}: no cue AUC ({cue['reason']})")
        table.append([
            category, mine.rows,
            f"{mine.changed / mine.answers_found:.0%} of {mine.answers_found}" if mine.answers_found else "-",
            f"{mine.error_steps / mine.rows:.2f}",
            f"{sum(positions) / len(positions):.2f}" if positions else "-",
            "-" if not cue or cue["auc"] is None else f"{cue['auc']:.2f}",
        ])
    text = ("## What the categories produce\n\nFinal answer changed: share of rows whose final answer differs from "
            "the source's (among rows where both answers were found). Error steps: mean per row. First error: "
            "first error step ÷ number of steps, mean." + cue_note + "\n\n")
    text += _table(["category", "rows", "final answer changed", "error steps", "first error", "cue AUC"], table)
    return text + ("\n\n" + "\n".join(notes) if notes else "") + "\n"


def verdict_table(counts: Counter) -> str:
    """A (category, verdict) -> count table: one row per category, one column per verdict present (reviewer order,
    `unverified` last), and a total row."""
    from injector.triage.verdicts import verdict_rank

    verdicts = sorted({verdict for _, verdict in counts}, key=verdict_rank)
    categories = sorted({category for category, _ in counts})
    rows = [[c, *(counts.get((c, v), 0) for v in verdicts)] for c in categories]
    rows.append(["**total**", *(sum(counts.get((c, v), 0) for c in categories) for v in verdicts)])
    return _table(["category", *verdicts], rows)


def _triage_sections(report: Any) -> list[str]:
    """The blind judge's verdicts on the rows (when a run was verified) and what --require, --decontaminate and
    --dedup left out, each drop with its reason."""
    parts = []
    if report.verdicts:
        parts.append("## Triage verdicts\n\nThe blind judge's verdict (`inject verify`) on the rows of this split, "
                     "per category (`unverified`: the run was verified, this candidate not yet):\n\n"
                     + verdict_table(report.verdicts) + "\n")
    parts.extend(_step_audit_section(report))
    lines = []
    if report.required:
        left_out = sum(report.left_out_by_verdict.values())
        lines.append(f"`--require {','.join(report.required)}` kept only candidates with "
                     f"{'that verdict' if len(report.required) == 1 else 'those verdicts'}; it left out {left_out}"
                     + (":\n\n" + verdict_table(report.left_out_by_verdict) if left_out else "."))
    if report.require_audit_clean:
        lines.append(f"`--require-audit-clean` left out {sum(report.left_out_by_audit.values())} candidates with a "
                     "step-audit flag" + "".join(f"; {c}: {n}" for c, n in sorted(report.left_out_by_audit.items())))
    if report.benchmark_files:
        files = ", ".join(f"`{name}`" for name in report.benchmark_files)
        lines.append(f"`--decontaminate` checked every question against the {report.benchmark_questions} questions "
                     f"of {files} (equal after normalisation, or sharing a run of 13 words): "
                     f"{sum(d.rule.startswith('benchmark') for d in report.dropped)} dropped.")
    if report.dedup_threshold is not None:
        lines.append(f"`--dedup` (MinHash Jaccard over word 5-grams ≥ {report.dedup_threshold}: the same category "
                     "and source with near-identical solutions, or near-identical questions of different sources): "
                     f"{sum(d.rule.startswith('duplicate') for d in report.dropped)} dropped.")
    hard = getattr(report, "hard_for", None)
    if hard is not None:
        from injector.curate.hard_for import summary_lines

        lines.append(f"`--hard-for` (adversarial filtering against {len(hard.panel)} models: "
                     f"{', '.join(hard.panel)}) dropped {len(hard.dropped)} items fewer than {hard.min_wrong} of "
                     "them miss; the ids are in `hard-for.json`.\n\n```\n"
                     + "\n".join(summary_lines(hard)) + "\n```")
    if report.dropped:
        lines.append(_table(["id", "category", "rule", "why"], [
            [f"`{d.id}`", d.category, d.rule, d.detail.replace("|", "\\|")] for d in report.dropped]))
    if lines:
        parts.append("## Left out\n\n" + "\n\n".join(lines) + "\n")
    return parts



def _step_audit_section(report: Any) -> list[str]:
    """Rows of the split the step audit flagged (a false relation in an unlabelled step, ...), per category."""
    if not report.audited:
        return []
    from injector.triage.step_audit.hooks import flag_table

    return ["## Step audit\n\nEvery closed relation of every step evaluated exactly (docs/step-audit.md); a flag "
            "marks a row whose labels the arithmetic disagrees with, for a reviewer to judge:\n\n"
            + flag_table(report.audit_flagged, report.audited) + "\n"]
