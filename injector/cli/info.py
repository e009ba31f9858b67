"""The commands that look at things without sending a request: categories, render, stats, audit, status, batch cancel, taxonomy validate."""
from __future__ import annotations

import itertools

import click

from injector.cli.base import examples, main
from injector.cli.options import InputOptions, SampleSize, input_options, output_mode_option

@main.command(epilog=examples("inject categories", "inject categories --taxonomy projudge",
                              "inject categories --taxonomy my/taxonomy.yaml"))
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
              help="A bundled taxonomy (prmbench, the default) or a taxonomy YAML file.")
def categories(taxonomy_path: str | None) -> None:
    """List the categories of the taxonomy."""
    from injector import Taxonomy

    taxonomy = Taxonomy.load(taxonomy_path)
    click.echo(f"taxonomy {taxonomy.name}: {len(taxonomy.categories)} categories")
    for category in taxonomy.categories:
        click.echo(f"{category.id:22} {category.name:28} {category.domain:12} {category.classification}")
        click.echo(f"{'':22} {category.definition}")



@main.command(epilog=examples(
    "inject render --category deception --limit 1",
    "inject render --category all --input data/sciences.jsonl --output-mode full --limit 2",
    "inject render --category counterfactual --input PRM800K/prm800k/data/phase2_train.jsonl --limit 1"))
@input_options
@output_mode_option
def render(inputs: InputOptions, output_mode: str) -> None:
    """Print the exact messages that would be sent, without calling any model."""
    from injector import render_messages

    taxonomy, selected, source = inputs.load()
    for trajectory in itertools.islice(source, inputs.limit):
        for category in selected:
            click.echo(f"=== {trajectory.id} / {category.id} ===")
            messages = render_messages(taxonomy, category, trajectory, output_mode=output_mode, attach_images=False)
            for message in messages:
                click.echo(f"--- {message['role']} ---\n{message['content']}\n")
            for image in trajectory.images:  # sent as image parts after the user text
                click.echo(f"--- image part ---\n{image}\n")
    click.echo(source.describe(), err=True)



@main.command(epilog=examples(
    "inject stats runs/a", "inject stats splits/v1 --json", "inject stats runs/a --cues --plots plots/",
    "inject stats --cues PRMBench/data/", "inject stats runs/a --cues --cue-sample all"))
@click.argument("path", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON.")
@click.option("--plots", type=click.Path(file_okay=False), help="Write PNG plots into this directory.")
@click.option("--cues", is_flag=True, help="Also run the surface-cue probe: how well wording alone finds the error "
              "steps (ROC AUC per category, on a seeded sample of at most --cue-sample solutions per category; "
              "needs scikit-learn).")
@click.option("--cue-sample", type=SampleSize(), default="5000", show_default=True, metavar="N|all",
              help="With --cues: probe at most N solutions per category (N >= 10; a seeded sample, the rows `inject "
              "build`'s card probes), one category at a time, and the total on a seeded sample of at most N of "
              "them, so memory stays flat however large the run; `all` probes every solution (memory grows with "
              "the run).")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
              help="Name categories (name, domain) from this taxonomy (default: as the run or split recorded).")
def stats(path, as_json, plots, cues, cue_sample, taxonomy_path) -> None:
    """Per-category numbers of a run or split directory, or of PRMBench-format JSONL (a file or a directory)."""
    import json

    from injector.curate.plots import write_plots
    from injector.curate.stats import compute_stats, stats_table

    if not cues and click.get_current_context().get_parameter_source("cue_sample") \
            is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError("--cue-sample sizes the cue probe: add --cues, or leave --cue-sample out")
    numbers = compute_stats(path, cues=cues, cue_sample=cue_sample, taxonomy=taxonomy_path)
    click.echo(json.dumps(numbers, indent=2) if as_json else stats_table(numbers))
    if plots:
        for written in write_plots(numbers, plots):
            click.echo(f"wrote {written}", err=True)


@main.command(epilog=examples(
    "inject audit PRMBench/data/circular.jsonl", "inject audit splits/v1/prmbench/circular.jsonl --json --report-only",
    "inject audit mine.jsonl --taxonomy my/taxonomy.yaml && publish mine.jsonl",
    "inject audit PRMBench/data/confidence.jsonl --steps", "inject audit processbench/gsm8k.jsonl --steps --json"))
@click.argument("file", type=click.Path())
@click.option("--input-format", type=click.Choice(["prmbench"]), default="prmbench", show_default=True,
              help="The file's record format (PRMBench's JSONL, the one format audited so far).")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH", help="A bundled taxonomy or a YAML file.")
@click.option("--json", "as_json", is_flag=True, help="Print every record's verdict as JSON lines.")
@click.option("--report-only", is_flag=True, help="Exit 0 even when records fail the audit (default: exit 4).")
@click.option("--steps", is_flag=True, help="The step audit instead: every closed relation of every step checked "
              "exactly, flags per item, and the label-noise estimate (flagged items per 100 with a Wilson interval, "
              "per category, and coverage). Reads PRMBench, ProcessBench and split files, or a directory of them.")
def audit(file, input_format, taxonomy_path, as_json, report_only, steps) -> None:
    """Audit a benchmark file, or a split directory `inject build` wrote, against the toolkit's rules: each
    record's verdict, then a summary; for a split, also every source problem found on two sides of it.

    Exits 4 when any record fails the audit or a problem is on two sides (--steps: any item is flagged), so a
    pipeline can gate on it
    (--report-only: exit 0).
    """
    import json
    from pathlib import Path

    if steps:
        return _audit_steps(file, taxonomy_path, as_json, report_only)
    from injector.curate.audit import audit_prmbench, audit_split, audit_table
    from injector.util.errors import AuditFailed
    from injector.taxonomy import Taxonomy

    auditing = audit_split if Path(file).is_dir() else audit_prmbench
    report = auditing(file, Taxonomy.load(taxonomy_path))
    for record in report.records:
        if as_json:
            click.echo(json.dumps(record, ensure_ascii=False))
        else:
            verdict = "valid" if record["valid"] else " ".join(record["codes"])
            where = f"{record.get('file', file)}:{record['line']}"
            click.echo(f"{where}\t{record['idx']}\t{record['category']}\t{verdict}")
    click.echo(audit_table(report), err=as_json)
    for finding in report.findings:
        click.echo(f"{file}: {finding}", err=as_json)
    invalid = sum(not record["valid"] for record in report.records)
    if report.findings and not report_only:
        raise AuditFailed(f"{file}: {len(report.findings)} source problem(s) on two sides of the split (build it "
                          "again: `inject build` keeps a problem on one side); exit 4, --report-only exits 0")
    if invalid and not report_only:
        raise AuditFailed(f"{file}: {invalid} of {len(report.records)} records fail the audit "
                          "(exit 4; --report-only exits 0)")


def _audit_steps(file: str, taxonomy_path: str | None, as_json: bool, report_only: bool) -> None:
    from pathlib import Path

    from injector.taxonomy import Taxonomy
    from injector.triage.step_audit.report import audit_steps_of_file, item_lines, json_lines, noise_table
    from injector.util.errors import AuditFailed

    report = audit_steps_of_file(Path(file), Taxonomy.load(taxonomy_path))
    click.echo("\n".join(json_lines(report) if as_json else item_lines(report)))
    click.echo(noise_table(report.estimate), err=as_json)
    if report.flagged and not report_only:
        raise AuditFailed(f"{file}: {report.flagged} of {len(report.items)} items flagged by the step audit "
                          "(exit 4; --report-only exits 0)")


@main.command("validate", hidden=True, context_settings={"ignore_unknown_options": True},
              add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def validate_alias(ctx: click.Context, args) -> None:
    """The former name of `audit`."""
    click.echo("note: `inject validate` is now `inject audit` (same options); running `inject audit`", err=True)
    with audit.make_context("audit", list(args), parent=ctx.parent) as audit_ctx:
        audit.invoke(audit_ctx)



@main.command(epilog=examples("inject status runs/a"))
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
def status(run_dir) -> None:
    """What a run directory holds: its state and counts, and its provider batches as last recorded."""
    from injector.engines.batch import batch_table
    from injector.records.directory import RunDirectory

    manifest = RunDirectory(run_dir).read_manifest()
    if manifest is None:
        from injector.util.errors import UserError

        raise UserError(f"{run_dir}: no manifest.json; not a run directory")
    counts = manifest.counts
    click.echo(f"{run_dir}: {manifest.status}, {counts.candidates} candidates, {counts.rejects} rejects")
    click.echo(batch_table(run_dir))


@main.group(epilog=examples("inject batch cancel runs/a --model gpt-4o-mini",
                            "inject batch cancel runs/a --model openai/NAME --api-base http://127.0.0.1:8000/v1"))
def batch() -> None:
    """Work with the provider batches of a run (`inject run --batch`)."""


@batch.command("cancel", epilog=examples("inject batch cancel runs/a --model gpt-4o-mini"))
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--model", required=True, envvar="INJECT_MODEL", show_envvar=True,
              help="The run's model (it says which provider, and which key, the cancel goes to).")
@click.option("--api-base", help="The run's server, if it had one; never read from the run directory (a received "
              "directory must not decide where your key is sent).")
def batch_cancel(run_dir, model, api_base) -> None:
    """Cancel the run's batches that are not finished (a later `inject run` resubmits what they did not answer)."""
    import asyncio

    from injector.engines.batch import BatchEngine, cancel_batches

    engine = BatchEngine(model, api_base=api_base, run_dir=run_dir)
    engine.check_ready()
    cancelled = asyncio.run(cancel_batches(engine))
    for batch_id, state in cancelled:
        click.echo(f"{batch_id}\t{state}")
    click.echo(f"{run_dir}: {len(cancelled)} batches cancelled", err=True)


@main.group(epilog=examples("inject taxonomy validate prmbench projudge",
                            "inject taxonomy validate my/taxonomy.yaml"))
def taxonomy() -> None:
    """Work with taxonomies."""


@taxonomy.command("validate", epilog=examples("inject taxonomy validate prmbench projudge",
                                               "inject taxonomy validate my/taxonomy.yaml"))
@click.argument("sources", nargs=-1, required=True, metavar="NAME|PATH...")
def taxonomy_validate(sources) -> None:
    """Check taxonomies: YAML, rules, templates rendered in both modes, hooks imported and called."""
    from injector.util.errors import UserError
    from injector.inject.taxonomy_lint import check_taxonomy

    failed = 0
    for source in sources:
        loaded, problems = check_taxonomy(source)
        if problems or loaded is None:
            failed += 1
            click.echo(f"{source}: {len(problems)} problem(s)")
            for problem in problems:
                click.echo(f"  - {problem}")
        else:
            click.echo(f"{source}: ok ({len(loaded.categories)} categories, every template rendered in both modes)")
    if failed:
        raise UserError(f"{failed} of {len(sources)} taxonomies have problems")
