"""`inject build`: splits from reviewed run directories."""
from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from injector.cli.base import examples, invocation, main
from injector.cli.config_file import config_option, from_option
from injector.cli.options import verbose_option

@main.command(epilog=examples(
    "inject build runs/a runs/b --out splits/v1",
    "inject build runs/a --out splits/v1 --by train-test --test-size 0.2 --seed 0 --license mit",
    "inject build runs/a --out splits/draft --include-unreviewed --overwrite",
    "inject build runs/a --out splits/v1 --require confirmed --dedup --decontaminate math500.jsonl",
    "inject build --from splits/v1 --overwrite      # again (after more reviews), with the options saved there"))
@config_option
@from_option("build", "out", "the split directory")
@verbose_option
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
@click.option("--push-to-hub", metavar="REPO",
              help="Also push the split to this Hugging Face Hub dataset repository: the card as README.md, the "
                   "Parquet files and every export (HF_TOKEN or `hf auth login`; HF_ENDPOINT honoured).")
@click.option("--private", is_flag=True, help="With --push-to-hub: create the repository private.")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
              help="Name categories (name, domain) from this taxonomy (default: as each run's manifest recorded).")
@click.option("--require", "require", multiple=True, metavar="VERDICT[,VERDICT]",
              help="Keep only candidates `inject verify` gave one of these verdicts (e.g. confirmed).")
@click.option("--dedup", is_flag=True, help="Drop near-duplicates within each split (MinHash over word 5-grams).")
@click.option("--dedup-threshold", type=click.FloatRange(0, 1, min_open=True), default=0.9, show_default=True,
              help="Jaccard similarity at which --dedup counts two candidates as near-duplicates.")
@click.option("--decontaminate", "decontaminate", multiple=True, type=click.Path(dir_okay=False), metavar="FILE",
              help="Drop candidates whose question is in this benchmark file (JSONL or JSON; repeatable).")
@click.option("--consensus", metavar="K-of-N|adjudicated",
              help="Take only candidates at least K of whose reviewers agree (K a majority of N, e.g. 2-of-3), or "
                   "with an adjudicated or unanimous decision (`inject review --adjudicate`).")
@click.option("--decontaminate-field", metavar="FIELD",
              help="The benchmark files' question field (default: question, problem, original_question or "
                   "modified_question).")
@click.option("--require-audit-clean", is_flag=True, help="Leave out candidates the step audit flags (a false "
              "relation in a step not labelled an error, ...; docs/step-audit.md); counted in the card.")
@click.option("--hard-for", "hard_for", multiple=True, type=click.Path(), metavar="REPORT",
              help="An `inject eval` report of a panel model (repeatable): keep only the items at least "
                   "--hard-min-wrong of them miss at the first error step.")
@click.option("--hard-min-wrong", type=click.IntRange(1), metavar="K",
              help="Panel models that must miss an item for it to stay (default: all of them).")
@click.option("--hard-check", "hard_check", multiple=True, type=click.Path(), metavar="REPORT",
              help="An `inject eval` report of a model outside the panel (repeatable): the build reports how "
                   "the filtering reorders the models (Kendall tau with a bootstrap interval).")
@click.option("--no-cues", "cues", flag_value=False, default=True,
              help="Leave the surface-cue figures out of the card (the slowest part of a large build).")
@click.option("--cue-sample", type=click.IntRange(10), default=5000, show_default=True, metavar="N",
              help="The card's cue figures read at most this many rows per category (a seeded sample).")
def build(**options) -> None:
    """Build benchmark splits from reviewed run directories."""
    from injector import api

    given = click.get_current_context().get_parameter_source("cue_sample")
    if not options["cues"] and given in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
        # A saved or --config file's cue-sample is left alone: `--from DIR --no-cues` reruns a build without them.
        raise click.UsageError("--cue-sample sizes the card's cue figures, which --no-cues leaves out: give one "
                               "of the two")
    options["license"] = options.pop("license_")
    options["taxonomy"] = options.pop("taxonomy_path")
    report = _build_logged(api.make_request(api.BuildRequest, **options, command=invocation()))
    splits = ", ".join(f"{name} {count}" for name, count in report.splits.items())
    left_out = sum(report.left_out_by_verdict.values())
    click.echo(f"{report.out_dir}: {len(report.rows)} rows ({splits}); {report.rejected_by_reviewer} rejected by "
               f"reviewers, {report.unreviewed_left_out} unreviewed left out"
               + (f", {left_out} left out by --require" if report.required else "")
               + (f", {sum(report.left_out_by_audit.values())} left out by --require-audit-clean"
                  if options.get("require_audit_clean") else "")
               + (f", {len(report.dropped)} dropped by --decontaminate/--dedup (listed in the card)"
                  if options["decontaminate"] or options["dedup"] else ""))
    if report.hard_for is not None:
        from injector.curate.hard_for import summary_lines

        click.echo("\n".join(summary_lines(report.hard_for)))


def _build_logged(request: Any) -> Any:
    """The build, logged to OUT/log.jsonl (written once the split is in place: it replaces the directory), its
    options saved to OUT/build-config.yaml."""
    from injector import api
    from injector.cli.config_file import write_saved_options
    from injector.runner.run_log import command_log, event

    with command_log(request.out, "build", deferred=True, runs=[str(path) for path in request.run_dirs]):
        report = api.build(request)
        write_saved_options(report.out_dir, "build")
        event("build_summary", f"{len(report.rows)} rows ({report.splits})", rows=len(report.rows),
              splits=report.splits, rejected_by_reviewer=report.rejected_by_reviewer,
              unreviewed_left_out=report.unreviewed_left_out, dropped=len(report.dropped))
    return report
