"""`inject build`: splits from reviewed run directories."""
from __future__ import annotations

import click

from injector.cli.base import examples, invocation, main

@main.command(epilog=examples(
    "inject build runs/a runs/b --out splits/v1",
    "inject build runs/a --out splits/v1 --by train-test --test-size 0.2 --seed 0 --license mit",
    "inject build runs/a --out splits/draft --include-unreviewed --overwrite",
    "inject build runs/a --out splits/v1 --require confirmed --dedup --decontaminate math500.jsonl"))
@click.argument("run_dirs", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--out", required=True, type=click.Path(file_okay=False), help="The split directory to write.")
@click.option("--by", type=click.Choice(["category", "train-test"]), default="category", show_default=True,
              help="Splits named after the categories, or train/test by source trajectory.")
@click.option("--test-size", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Fraction of source trajectories in `test` (with --by train-test).")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the train/test assignment.")
@click.option("--include-unreviewed", is_flag=True, help="Also take unreviewed candidates (column reviewed=false).")
@click.option("--include-sources", is_flag=True, help="Add each source solution once as a correct control item.")
@click.option("--license", "license_", default="other", show_default=True, help="Licence field of the card.")
@click.option("--overwrite", is_flag=True, help="Replace a non-empty --out directory.")
@click.option("--push-to-hub", metavar="REPO", help="Also push the DatasetDict to the Hugging Face Hub.")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
              help="Name categories (name, domain) from this taxonomy (default: as each run's manifest recorded).")
@click.option("--require", "require", multiple=True, metavar="VERDICT[,VERDICT]",
              help="Keep only candidates `inject verify` gave one of these verdicts (e.g. confirmed).")
@click.option("--dedup", is_flag=True, help="Drop near-duplicates within each split (MinHash over word 5-grams).")
@click.option("--dedup-threshold", type=click.FloatRange(0, 1, min_open=True), default=0.9, show_default=True,
              help="Jaccard similarity at which --dedup counts two candidates as near-duplicates.")
@click.option("--decontaminate", "decontaminate", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Drop candidates whose question is in this benchmark file (JSONL or JSON; repeatable).")
@click.option("--decontaminate-field", metavar="FIELD",
              help="The benchmark files' question field (default: question, problem, original_question or "
                   "modified_question).")
def build(**options) -> None:
    """Build benchmark splits from reviewed run directories."""
    from injector.curate.build import BuildRequest
    from injector.curate.build import build as build_splits

    options["license"] = options.pop("license_")
    options["taxonomy"] = options.pop("taxonomy_path")
    report = build_splits(BuildRequest(**options, command=invocation()))
    splits = ", ".join(f"{name} {count}" for name, count in report.splits.items())
    left_out = sum(report.left_out_by_verdict.values())
    click.echo(f"{report.out_dir}: {len(report.rows)} rows ({splits}); {report.rejected_by_reviewer} rejected by "
               f"reviewers, {report.unreviewed_left_out} unreviewed left out"
               + (f", {left_out} left out by --require" if report.required else "")
               + (f", {len(report.dropped)} dropped by --decontaminate/--dedup (listed in the card)"
                  if options["decontaminate"] or options["dedup"] else ""))
