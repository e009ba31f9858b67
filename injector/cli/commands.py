"""`inject`: a thin command-line skin over the public API (parse options, call the API, map errors to exit codes)."""
from __future__ import annotations

import functools
import itertools
import logging
import os
import sys
import tempfile
import traceback
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from injector.model.choices import CLIENTS, DEFAULT_OUTPUT_MODE, DUPLICATE_ID_POLICIES, OFFLINE_MODEL, OUTPUT_MODES, RECORD_FORMATS
from injector.util.errors import BatchesPending, InjectorError
from injector.util.redaction import redact
from injector.util.version import __version__

EXIT_INTERNAL, EXIT_INTERRUPTED = 1, 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what coreutils exit with when the reader of their output went away
_invocation: list[str] = ["inject"]


def invocation() -> list[str]:
    """The command line of this invocation, as the user typed it."""
    return list(_invocation)


class InjectGroup(click.Group):
    """Turns library errors into one-line messages and the documented exit codes, never a bare traceback."""

    def main(self, args=None, *pargs, **kwargs):
        # Keep the arguments as given, for manifests and cards ("the command that reproduces it").
        global _invocation
        _invocation = ["inject", *(sys.argv[1:] if args is None else args)]
        try:
            return super().main(args, *pargs, **kwargs)
        finally:
            # Output still buffered is flushed here: at interpreter exit a closed pipe would print "Exception
            # ignored ... BrokenPipeError" and exit 120.
            try:
                sys.stdout.flush()
            except BrokenPipeError:
                _silence_stdout()
                sys.exit(EXIT_BROKEN_PIPE)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except InjectorError as exc:
            click.echo(redact(f"error: {exc}"), err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted; run the same command again to continue", err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:  # `inject render ... | head`: the reader has what it wanted; end silently
            _silence_stdout()
            ctx.exit(EXIT_BROKEN_PIPE)
        except (click.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except Exception as exc:  # a bug: keep the traceback, show one line
            try:
                saved = f"traceback saved to {_save_traceback()}"
            except OSError as error:
                saved = f"the traceback could not be saved: {error}"
            click.echo(redact(f"internal error: {type(exc).__name__}: {exc} ({saved})"), err=True)
            ctx.exit(EXIT_INTERNAL)


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so that no later flush (Python's at exit included) fails on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # not a real file (a test runner's buffer)
        pass


def crash_dir() -> Path:
    """Where crash reports go: the user's cache directory (XDG_CACHE_HOME on Linux), not a shared temp directory."""
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("prm-injector")) / "crashes"


def _save_traceback() -> Path:
    directory = crash_dir()
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    # mkstemp: a random name created with O_EXCL (and O_NOFOLLOW), mode 0600; never a file or link already there.
    fd, name = tempfile.mkstemp(prefix=f"inject-crash-{stamp}-", suffix=".txt", dir=directory)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(redact(traceback.format_exc()))  # a report may be shared: no key in it
    return Path(name)


def _parse_fields(values: tuple[str, ...]) -> dict[str, str] | None:
    fields = {}
    for value in values:
        target, sep, source = value.partition("=")
        if not sep or not target or not source:
            raise click.UsageError(f"--field {value!r}: expected TARGET=SOURCE, e.g. --field question=problem")
        fields[target.strip()] = source.strip()
    return fields or None


@dataclass(frozen=True)
class InputOptions:
    """The options of the commands that read trajectories (`input_options`), as one value."""

    input_path: str | None
    input_format: str | None
    fields: tuple[str, ...]
    split: str | None
    strict: bool
    skip_invalid: bool
    duplicate_ids: str
    limit: int | None
    categories: tuple[str, ...]
    taxonomy_path: str | None
    images_from: str | None

    def load(self) -> tuple[Any, list[Any], Any]:
        """The taxonomy, the selected categories and the trajectory source these options name."""
        from injector import Taxonomy, load_trajectories

        taxonomy = Taxonomy.load(self.taxonomy_path)
        selected = taxonomy.select(list(self.categories))
        source = load_trajectories(
            self.input_path, self.input_format, strict=self.strict, skip_invalid=self.skip_invalid,
            fields=_parse_fields(self.fields), split=self.split, images_from=self.images_from,
            duplicate_ids=self.duplicate_ids,
        )
        return taxonomy, selected, source


def input_options(function):
    """Options shared by the commands that read trajectories, passed to the command as one `InputOptions`."""
    options = [
        click.option("--input", "input_path", metavar="PATH|hf:NAME",
                     help="Trajectories: a JSONL file, a save_to_disk directory or hf:NAME. Default: bundled sample."),
        click.option("--input-format", type=click.Choice(RECORD_FORMATS),
                     help="Record format; detected from the first record when omitted."),
        click.option("--field", "fields", multiple=True, metavar="TARGET=SOURCE",
                     help="Map a record field onto a Trajectory field (repeatable; dotted SOURCE paths allowed)."),
        click.option("--split", help="Split of a Hugging Face dataset with several splits."),
        click.option("--strict", is_flag=True, help="PRM800K: also require every chosen step to be rated 1."),
        click.option("--skip-invalid", is_flag=True, help="Count and skip malformed records instead of stopping."),
        click.option("--duplicate-ids", type=click.Choice(DUPLICATE_ID_POLICIES), default=DUPLICATE_ID_POLICIES[0],
                     show_default=True,
                     help="Two different records with the same id: stop (error), or keep the first and skip the "
                          "rest (first)."),
        click.option("--limit", type=click.IntRange(min=1), help="Use at most N trajectories."),
        click.option("--category", "categories", multiple=True, required=True, metavar="ID",
                     help="Category id (repeatable), or `all`."),
        click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
                     help="A bundled taxonomy (prmbench, the default) or a taxonomy YAML file."),
        click.option("--images-from", "images_from", metavar="DIR", type=click.Path(file_okay=False),
                     help="Local images must lie under DIR. Default: the input file's directory (a Hugging Face "
                          "dataset has none)."),
    ]
    names = list(InputOptions.__dataclass_fields__)

    @functools.wraps(function)
    def command(**values):
        inputs = InputOptions(**{name: values.pop(name) for name in names})
        return function(inputs, **values)

    for option in reversed(options):
        command = option(command)
    return command


def request_options(who: str):
    """The request loop's options that `verify` and `eval` share (concurrency, limits, cache, prices, budget);
    `who` prefixes their help ("Judge: ")."""
    def lead(text: str) -> str:
        text = who + text
        return text[:1].upper() + text[1:]

    options = [
        click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
                     help=lead("requests in flight.")),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300, show_default=True,
                     help="Seconds to wait for one answer before it counts as a transient fault."),
        click.option("--rpm", type=click.FloatRange(min=0, min_open=True), help=lead("requests per minute, at most.")),
        click.option("--tpm", type=click.FloatRange(min=0, min_open=True), help=lead("tokens per minute, at most.")),
        click.option("--cache", "cache_path", type=click.Path(dir_okay=False),
                     help="Request cache file (SQLite). Default: the user cache directory."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the request cache."),
        click.option("--price-in", type=click.FloatRange(min=0),
                     help=lead("dollars per million prompt tokens (models litellm has no price for).")),
        click.option("--price-out", type=click.FloatRange(min=0), help=lead("dollars per million completion tokens.")),
        click.option("--max-cost", type=click.FloatRange(min=0),
                     help=lead("stop cleanly (exit 3, resumable) once this invocation has spent this many dollars.")),
    ]

    def decorate(function):
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def _examples(*commands: str) -> str:
    """A --help epilog of example commands, kept as written (click's \\b stops it re-wrapping them)."""
    return "Examples:\n\n\b\n" + "\n".join(commands)


@click.group(cls=InjectGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="inject")
def main() -> None:
    """Inject validated process-level errors into fully correct step-by-step solutions."""
    logging.basicConfig(format="warning: %(message)s", level=logging.WARNING)
    from injector.util.redaction import RedactingFilter

    for handler in logging.getLogger().handlers:  # no key reaches the terminal through a log line
        if not any(isinstance(existing, RedactingFilter) for existing in handler.filters):
            handler.addFilter(RedactingFilter())


@main.command(epilog=_examples("inject categories", "inject categories --taxonomy projudge",
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


output_mode_option = click.option(
    "--output-mode", type=click.Choice(OUTPUT_MODES), default=DEFAULT_OUTPUT_MODE, show_default=True,
    help="edits: the model lists only its edits, applied by the toolkit; full: it writes back the whole solution "
         "(multi_solution always writes a whole new solution).")


@main.command(epilog=_examples(
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


@main.command(epilog=_examples(
    "inject run --category circular_logic                  # offline engine, bundled sample, no key",
    "inject run --category all --model gpt-4o --dry-run    # units, tokens, estimated cost; sends nothing",
    "inject run --category all --model gpt-4o --max-cost 20 --rpm 450 --out runs/gpt4o",
    "inject run --category redundancy --model openai/qwen --api-base http://127.0.0.1:8000/v1",
    "inject run --category all --model gpt-4o --rpm 450 --out runs/big --executor ray   # Ray workers"))
@input_options
@output_mode_option
@click.option("--out", type=click.Path(file_okay=False), help="Run directory. Default: runs/<UTC date-time>.")
@click.option("--model", envvar="INJECT_MODEL", show_envvar=True,
              help="`offline` (the default: rule-based, no LLM) or any litellm model string: gpt-4o, anthropic/..., "
                   "hosted_vllm/..., ollama_chat/..., openai/NAME.")
@click.option("--api-base", multiple=True,
              help="Base URL of an OpenAI-compatible (or other) server, e.g. http://127.0.0.1:8000/v1. Repeat it to "
                   "spread the run over several servers of the model (a litellm Router).")
@click.option("--deployments", "deployments_file", type=click.Path(dir_okay=False), metavar="FILE",
              help="YAML list of servers (model, api_base, rpm, tpm, api_key_env) to spread the run over through "
                   "a litellm Router; see README, \"Beyond one machine\".")
@click.option("--temperature", type=float, default=1.0, show_default=True,
              help="Sampling temperature sent to the model (0: most repeatable; higher: more varied injections). "
                   "Part of the run's configuration and the cache key; the offline engine ignores it.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=4096, show_default=True,
              help="Most completion tokens per answer (max_tokens sent to the model).")
@click.option("--seed", type=int, default=0, show_default=True, help="Sample k of a unit is sent seed+k.")
@click.option("--samples", type=click.IntRange(min=1), default=1, show_default=True,
              help="Candidates to ask for per (trajectory, category).")
@click.option("--no-schema", is_flag=True, help="Do not send a JSON-schema response_format (for servers that reject it).")
@click.option("--max-attempts", type=click.IntRange(min=1), default=3, show_default=True,
              help="Attempts per unit; a failed answer is sent back with the validator's messages.")
@click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True, help="Requests in flight.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300, show_default=True,
              help="Seconds to wait for one answer before it counts as a transient fault.")
@click.option("--rpm", type=click.FloatRange(min=0, min_open=True), help="Requests per minute, at most.")
@click.option("--tpm", type=click.FloatRange(min=0, min_open=True), help="Tokens per minute, at most.")
@click.option("--cache", "cache_path", type=click.Path(dir_okay=False),
              help="Request cache file (SQLite). Default: the user cache directory.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the request cache.")
@click.option("--price-in", type=click.FloatRange(min=0), help="Dollars per million prompt tokens (unknown models).")
@click.option("--price-out", type=click.FloatRange(min=0), help="Dollars per million completion tokens.")
@click.option("--max-cost", type=click.FloatRange(min=0), help="Stop cleanly (exit 3, resumable) once this run has "
              "spent this many dollars.")
@click.option("--client", type=click.Choice(CLIENTS), envvar="INJECT_CLIENT",
              show_envvar=True, default="auto", show_default=True,
              help="How to reach the model: auto uses the openai SDK for OpenAI-compatible endpoints (openai/..., "
                   "hosted_vllm/... with --api-base, OpenAI's chat models; faster start-up and less CPU) and "
                   "litellm for the rest; the same requests either way.")
@click.option("--dry-run", is_flag=True, help="Print the requests, prompt tokens and estimated cost; send nothing.")
@click.option("--retry-rejects", is_flag=True, help="Also redo units an earlier run of this directory rejected "
              "(transient failures are always redone).")
@click.option("--batch", is_flag=True, help="Send the requests through the provider's batch API (cheaper, slower; "
              "needs --out). --concurrency is then the most requests one round holds (default with --batch: 5000).")
@click.option("--batch-max-requests", type=click.IntRange(min=1), default=50_000, show_default=True,
              help="Most requests in one batch file (OpenAI's limit).")
@click.option("--batch-max-bytes", type=click.IntRange(min=1), default=200 * 1024 * 1024, show_default=True,
              help="Most bytes in one batch file (OpenAI's limit: 200 MB).")
@click.option("--batch-poll-seconds", type=click.FloatRange(min=0), default=30, show_default=True,
              help="First wait between polls of running batches (then longer, up to 10 minutes).")
@click.option("--no-wait", is_flag=True, help="With --batch: submit and exit; the same command again collects.")
@click.option("--executor", type=click.Choice(["local", "ray"]), default="local", show_default=True,
              help="Where units run: this process, or Ray workers (RAY_ADDRESS, else a local Ray; needs "
                   "prm-injector[ray]). --concurrency, --rpm, --tpm and --max-cost are divided among the workers.")
@click.option("--ray-workers", type=click.IntRange(min=1), metavar="N",
              help="With --executor ray: workers (Ray actors). Default: one per CPU of the Ray cluster; never more "
                   "than --concurrency.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="Worker processes, each over its own shard of the units (use every core: validation is CPU-bound). "
                   "--concurrency, --rpm, --tpm and --max-cost are divided among them.")
@click.pass_context
def run(ctx: click.Context, inputs: InputOptions, output_mode, out, model, api_base, deployments_file, temperature,
        max_tokens, seed, samples, no_schema,
        max_attempts, concurrency, timeout, rpm, tpm, cache_path, no_cache, price_in, price_out, max_cost, client,
        dry_run, retry_rejects, batch, batch_max_requests, batch_max_bytes, batch_poll_seconds, no_wait, executor,
        ray_workers, workers) -> None:
    """Inject errors into trajectories and write candidates and rejects to a run directory."""
    from injector import RunSpec, split_by_support
    from injector import dry_run as plan_run
    from injector import run as run_injection
    from injector.engines import from_model
    from injector.runner.loop import UnitExecutor, default_run_dir
    from injector.runner.progress import ProgressDisplay, dry_run_table, summary_table

    if (price_in is None) != (price_out is None):
        raise click.UsageError("give both --price-in and --price-out (dollars per million tokens)")
    if workers > concurrency:
        raise click.UsageError(f"--workers {workers} needs --concurrency {workers} or more (each worker keeps at "
                               "least one request in flight)")
    taxonomy, selected, source = inputs.load()
    if not model and not deployments_file:
        click.echo("no model given: using the offline rule-based engine (--model offline); for an LLM pass "
                   "--model, e.g. --model gpt-4o, or set INJECT_MODEL", err=True)
    batch_settings = None
    if batch or no_wait:
        from injector.engines import BatchSettings

        if not batch or not out:
            raise click.UsageError("--batch needs --out (the same command, run again, collects the batches there)"
                                   if batch else "--no-wait goes with --batch")
        if executor == "ray":
            raise click.UsageError("--batch and --executor ray do not combine: a batch run needs one process")
        batch_settings = BatchSettings(run_dir=Path(out), max_requests=batch_max_requests, max_bytes=batch_max_bytes,
                                       poll_seconds=batch_poll_seconds, wait=not no_wait)
        if ctx.get_parameter_source("concurrency") is click.core.ParameterSource.DEFAULT:
            concurrency = 5000
    engine_options = dict(api_base=api_base, deployments=deployments_file, temperature=temperature,
                          max_tokens=max_tokens, use_schema=not no_schema, timeout=timeout, rpm=rpm, tpm=tpm,
                          use_cache=not (no_cache or dry_run), cache_path=cache_path, price_in=price_in,
                          price_out=price_out, client=client)
    engine_model = model or (None if deployments_file else OFFLINE_MODEL)
    engine = from_model(engine_model, batch=batch_settings, **engine_options)
    units_executor: UnitExecutor | None = None
    ray_executor = None
    if executor == "ray" and not dry_run:
        from injector.runner.executors.ray_actors import RayExecutor, WorkerEngine

        if deployments_file:  # each worker's Router would pace every deployment at its full rpm/tpm
            raise click.UsageError("--deployments and --executor ray do not combine yet: use --api-base (repeatable) "
                                   "with --rpm/--tpm, which are divided among the workers")
        if cache_path:  # a worker's working directory is not this one
            engine_options["cache_path"] = os.path.abspath(cache_path)
        units_executor = ray_executor = RayExecutor(WorkerEngine(engine_model, engine_options), workers=ray_workers)
    if workers > 1 and not dry_run:
        from injector.runner.executors.processes import WorkerProcesses

        if executor == "ray" or batch or deployments_file:
            raise click.UsageError("--workers goes with the local executor and one server or --api-base list: use "
                                   "--ray-workers with --executor ray; --batch and --deployments run in one process")
        units_executor = WorkerProcesses(workers)
    for category_id, reason in split_by_support(engine, selected)[1].items():
        click.echo(f"skipping {category_id}: {reason}; pass --model with an LLM to include it", err=True)
    spec = RunSpec(taxonomy=taxonomy, categories=selected, samples=samples, seed=seed, output_mode=output_mode,
                   limit=inputs.limit, max_attempts=max_attempts, retry_rejects=retry_rejects,
                   out=Path(out) if out else None if dry_run else default_run_dir(), concurrency=concurrency,
                   max_cost=max_cost)
    if dry_run:
        click.echo(dry_run_table(plan_run(source, spec, engine)))
        return
    command = invocation()
    try:
        with ProgressDisplay() as display:
            result = run_injection(source, spec, engine, on_progress=display.update, command=command,
                                   executor=units_executor)
    except KeyboardInterrupt:
        from injector.util.redaction import redact_command

        resume = " ".join(redact_command(command)) + ("" if "--out" in command else f" --out {spec.out}")
        click.echo(f"interrupted; nothing written is lost. Resume with: {resume}", err=True)
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    except BatchesPending as pending:
        click.echo(f"{spec.out}: {pending}", err=True)
        return
    counts = result.manifest.counts
    click.echo(source.describe(), err=True)
    click.echo(summary_table(result.progress), err=True)
    if ray_executor is not None:
        click.echo(ray_executor.last_run.describe(), err=True)
    click.echo(
        f"{result.out_dir}: {counts['candidates']} candidates, {counts['rejects']} rejects "
        f"({result.progress.done} new, {result.progress.skipped_existing} already there)"
    )
    if result.progress.provider_unreachable():
        from injector.util.errors import ProviderUnreachable

        raise ProviderUnreachable("no unit produced a candidate and some failed transiently (provider unreachable; "
                                  "see the summary); exit 5, run the same command again to retry them")


@main.command(epilog=_examples(
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
def build(run_dirs, out, by, test_size, seed, include_unreviewed, include_sources, license_, overwrite,
          push_to_hub, taxonomy_path, require, dedup, dedup_threshold, decontaminate, decontaminate_field) -> None:
    """Build benchmark splits from reviewed run directories."""
    from injector.curate.build import build as build_splits

    report = build_splits(list(run_dirs), out, by=by, test_size=test_size, seed=seed,
                          include_unreviewed=include_unreviewed, include_sources=include_sources,
                          overwrite=overwrite, license=license_, command=invocation(),
                          push_to_hub=push_to_hub, taxonomy=taxonomy_path, require=require or None,
                          dedup_threshold=dedup_threshold if dedup else None, decontaminate=decontaminate,
                          decontaminate_field=decontaminate_field)
    splits = ", ".join(f"{name} {count}" for name, count in report.splits.items())
    left_out = sum(report.left_out_by_verdict.values())
    click.echo(f"{report.out_dir}: {len(report.rows)} rows ({splits}); {report.rejected_by_reviewer} rejected by "
               f"reviewers, {report.unreviewed_left_out} unreviewed left out"
               + (f", {left_out} left out by --require" if report.required else "")
               + (f", {len(report.dropped)} dropped by --decontaminate/--dedup (listed in the card)"
                  if decontaminate or dedup else ""))


@main.command(epilog=_examples(
    "inject stats runs/a", "inject stats splits/v1 --json", "inject stats runs/a --cues --plots plots/",
    "inject stats --cues PRMBench/data/"))
@click.argument("path", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON.")
@click.option("--plots", type=click.Path(file_okay=False), help="Write PNG plots into this directory.")
@click.option("--cues", is_flag=True, help="Also run the surface-cue probe: how well wording alone finds the error "
              "steps (ROC AUC per category; needs scikit-learn).")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
              help="Name categories (name, domain) from this taxonomy (default: as the run or split recorded).")
def stats(path, as_json, plots, cues, taxonomy_path) -> None:
    """Per-category numbers of a run or split directory, or of PRMBench-format JSONL (a file or a directory)."""
    import json

    from injector.curate.stats import compute_stats, stats_table, write_plots

    numbers = compute_stats(path, cues=cues, taxonomy=taxonomy_path)
    click.echo(json.dumps(numbers, indent=2) if as_json else stats_table(numbers))
    if plots:
        for written in write_plots(numbers, plots):
            click.echo(f"wrote {written}", err=True)


@main.command(epilog=_examples(
    "inject audit PRMBench/data/circular.jsonl", "inject audit splits/v1/prmbench/circular.jsonl --json --report-only",
    "inject audit mine.jsonl --taxonomy my/taxonomy.yaml && publish mine.jsonl"))
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--input-format", type=click.Choice(["prmbench"]), default="prmbench", show_default=True,
              help="The file's record format (PRMBench's JSONL, the one format audited so far).")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH", help="A bundled taxonomy or a YAML file.")
@click.option("--json", "as_json", is_flag=True, help="Print every record's verdict as JSON lines.")
@click.option("--report-only", is_flag=True, help="Exit 0 even when records fail the audit (default: exit 4).")
def audit(file, input_format, taxonomy_path, as_json, report_only) -> None:
    """Audit a benchmark file against the toolkit's rules: each record's verdict, then a summary.

    Exits 4 when any record fails the audit, so a pipeline can gate on it (--report-only: exit 0).
    """
    import json

    from injector.curate.audit import audit_prmbench, audit_table
    from injector.util.errors import AuditFailed
    from injector.taxonomy import Taxonomy

    report = audit_prmbench(file, Taxonomy.load(taxonomy_path))
    for record in report.records:
        if as_json:
            click.echo(json.dumps(record, ensure_ascii=False))
        else:
            verdict = "valid" if record["valid"] else " ".join(record["codes"])
            click.echo(f"{file}:{record['line']}\t{record['idx']}\t{record['category']}\t{verdict}")
    click.echo(audit_table(report), err=as_json)
    invalid = sum(not record["valid"] for record in report.records)
    if invalid and not report_only:
        raise AuditFailed(f"{file}: {invalid} of {len(report.records)} records fail the audit "
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


@main.command(epilog=_examples(
    "inject verify runs/gpt4o --model gpt-4o --dry-run          # critiques, tokens, estimated cost; sends nothing",
    "inject verify runs/gpt4o --model gpt-4o --max-cost 5 --votes 3",
    "inject verify runs/qwen --model openai/qwen --api-base http://127.0.0.1:8000/v1 --rollouts 8"))
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--model", envvar="INJECT_VERIFY_MODEL", show_envvar=True, required=True,
              help="The judge: any litellm model string (gpt-4o, anthropic/..., openai/NAME with --api-base).")
@click.option("--api-base", help="Base URL of an OpenAI-compatible (or other) server, e.g. http://127.0.0.1:8000/v1.")
@click.option("--votes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Critiques per solution for candidates whose first verdict is not `confirmed`; the majority's "
                   "verdict wins, a tie is `disputed`.")
@click.option("--votes-all", is_flag=True, help="Take --votes critiques of every candidate, confirmed ones included.")
@click.option("--rollouts", type=click.IntRange(min=0), default=0, show_default=True,
              help="Continuations per prefix (before and through the first error step) for candidates whose final "
                   "answer changed and whose question did not; 0: none.")
@click.option("--rollout-model", help="The model that continues solutions (default: --model; same --api-base).")
@click.option("--temperature", type=float, default=1.0, show_default=True,
              help="Sampling temperature of the judge and the rollouts (votes need it above 0).")
@click.option("--max-tokens", type=click.IntRange(min=1), default=4096, show_default=True,
              help="Most completion tokens per answer.")
@click.option("--seed", type=int, default=0, show_default=True, help="Sample k of a critique is sent seed+k.")
@click.option("--no-schema", is_flag=True, help="Do not send the JSON-schema response_format.")
@request_options("")
@click.option("--dry-run", is_flag=True, help="Print the critiques, prompt tokens and estimated cost; send nothing.")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
              help="Take the categories' critique kinds from this taxonomy (default: the one the run recorded).")
def verify(run_dir, model, api_base, votes, votes_all, rollouts, rollout_model, temperature, max_tokens, seed,
           no_schema, concurrency, timeout, rpm, tpm, cache_path, no_cache, price_in, price_out, max_cost, dry_run,
           taxonomy_path) -> None:
    """Triage a run: a blind judge finds the first error of every candidate (and of its original) and gives a
    verdict (RUN/verify.jsonl, RUN/verify-summary.json)."""
    from injector.engines import LLMEngine
    from injector.engines.cache import RequestCache
    from injector.engines.limits import RateLimiter
    import time

    from injector.triage.verify import VerifySpec, plan_table, plan_verify, status_line, summary_table
    from injector.triage.verify import verify as verify_run

    if (price_in is None) != (price_out is None):
        raise click.UsageError("give both --price-in and --price-out (dollars per million tokens)")
    cache = None if no_cache or dry_run else RequestCache(cache_path)
    limiter = RateLimiter(rpm, tpm)  # one budget for the judge and the rollouts

    def engine(name: str) -> LLMEngine:
        return LLMEngine(name, api_base=api_base, temperature=temperature, max_tokens=max_tokens,
                         use_schema=not no_schema, timeout=timeout, limiter=limiter, cache=cache,
                         price_in=price_in, price_out=price_out)

    judge = engine(model)
    rollout_engine = engine(rollout_model) if rollout_model and rollout_model != model else judge
    spec = VerifySpec(votes=votes, votes_all=votes_all, rollouts=rollouts, seed=seed, concurrency=concurrency,
                      max_cost=max_cost, taxonomy=taxonomy_path)
    if dry_run:
        click.echo(plan_table(plan_verify(run_dir, judge, spec, rollout_engine=rollout_engine)))
        return
    shown = [time.monotonic()]

    def progress(summary) -> None:  # a plain line every 10 s: a long pass is not silent
        if time.monotonic() - shown[0] >= 10:
            shown[0] = time.monotonic()
            click.echo(status_line(summary), err=True)

    try:
        summary = verify_run(run_dir, judge, spec, rollout_engine=rollout_engine, on_progress=progress)
    except KeyboardInterrupt:
        click.echo("interrupted; nothing written is lost. Run the same command again to continue", err=True)
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    click.echo(summary_table(summary))
    if summary.failed and not summary.verified:
        from injector.util.errors import ProviderUnreachable

        raise ProviderUnreachable(f"no candidate was verified and {summary.failed} failed ({summary.failure}); "
                                  "exit 5, run the same command again to retry them")


def _register_review() -> None:
    # The review command lives with the review app; its module imports only click at the top.
    from injector.curate.review.command import review

    main.add_command(review)


_register_review()


@main.command(epilog=_examples("inject status runs/a"))
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False))
def status(run_dir) -> None:
    """What a run directory holds: its state and counts, and its provider batches as last recorded."""
    from injector.engines.batch import batch_table
    from injector.records.directory import RunDirectory

    manifest = RunDirectory(run_dir).read_manifest()
    if manifest is None:
        from injector.util.errors import UserError

        raise UserError(f"{run_dir}: no manifest.json; not a run directory")
    counts = manifest.get("counts") or {}
    click.echo(f"{run_dir}: {manifest.get('status')}, {counts.get('candidates', 0)} candidates, "
               f"{counts.get('rejects', 0)} rejects")
    click.echo(batch_table(run_dir))


@main.group(epilog=_examples("inject batch cancel runs/a --model gpt-4o-mini",
                            "inject batch cancel runs/a --model openai/NAME --api-base http://127.0.0.1:8000/v1"))
def batch() -> None:
    """Work with the provider batches of a run (`inject run --batch`)."""


@batch.command("cancel", epilog=_examples("inject batch cancel runs/a --model gpt-4o-mini"))
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


@main.group(epilog=_examples("inject taxonomy validate prmbench projudge",
                            "inject taxonomy validate my/taxonomy.yaml"))
def taxonomy() -> None:
    """Work with taxonomies."""


@taxonomy.command("validate", epilog=_examples("inject taxonomy validate prmbench projudge",
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


def _every_ten_seconds(line):
    """A progress callback that prints `line(*args)` to stderr at most every 10 s, and at the end."""
    import time

    last = [time.monotonic()]

    def show(done: int, total: int) -> None:
        if done == total or time.monotonic() - last[0] >= 10:
            last[0] = time.monotonic()
            click.echo(line(done, total), err=True)

    return show


@main.command("eval", epilog=_examples(
    "inject eval splits/demo --scores data/demo_scores.jsonl --out reports/demo",
    "inject eval splits/v1 --split test --judge gpt-4o --max-cost 5 --out reports/gpt4o",
    "inject eval PRMBench/data/ --prm-server http://127.0.0.1:8000 --prm-model Qwen/Qwen2.5-Math-PRM-7B --out r/qwen",
    "inject eval ProcessBench/math.jsonl --scores my_prm.jsonl --sweep --sweep-metric processbench --out r/mine",
    "inject eval --compare reports/gpt4o r/qwen"))
@click.argument("paths", nargs=-1, required=True, metavar="SPLIT | --compare REPORT...")
@click.option("--out", type=click.Path(file_okay=False), help="The report directory to write (required to "
              "evaluate; with --compare, also write comparison.md there).")
@click.option("--scores", "scores_path", type=click.Path(dir_okay=False), metavar="FILE",
              help='A PRM\'s scores: JSONL of {"id", "step_scores": [0..1 per step]}.')
@click.option("--judge", metavar="MODEL", help="An LLM judge: any litellm model string (gpt-4o, openai/NAME, ...).")
@click.option("--prm-server", metavar="URL", help="A PRM served by vLLM (its pooling endpoint), e.g. "
              "http://127.0.0.1:8000.")
@click.option("--prm-model", metavar="NAME", help="The model name the vLLM server serves (with --prm-server).")
@click.option("--step-separator", default="<extra_0>", show_default=True,
              help="The token the PRM scores, put after each step (with --prm-server).")
@click.option("--split", "split_name", help="Of an `inject build` directory: evaluate this split only (default all).")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
              help="Maps PRMBench classifications to category ids (default: the bundled prmbench taxonomy).")
@click.option("--threshold", type=click.FloatRange(0, 1),
              help="A step is predicted correct when its score is above this  [default: 0.5]")
@click.option("--sweep", is_flag=True, help="Choose the threshold on a 20%% dev subset (by a hash of the ids) and "
              "report the rest.")
@click.option("--sweep-metric", type=click.Choice(["prmscore", "processbench"]), default="prmscore",
              show_default=True, help="What --sweep maximises.")
@click.option("--protocol", type=click.Choice(["prmbench", "strict"]),
              help="How the split is read and scored: prmbench (as PRMBench's own code does; the default for its "
              "files) or strict (the default for everything else). See docs/evaluation-protocols.md.")
@click.option("--label-rule", metavar="RULE", help="How scores become step labels: threshold:T (default "
              "threshold:0.5; threshold:0 for judges) or step-difference:D (Skywork-PRM: step-difference:-0.05).")
@click.option("--bootstrap", "resamples", type=click.IntRange(min=0), default=1000, show_default=True,
              help="Bootstrap resamples for the intervals (0: none).")
@click.option("--bootstrap-seed", type=int, default=0, show_default=True, help="The bootstrap's seed.")
@click.option("--confidence", type=click.FloatRange(0.5, 1, max_open=True), default=0.95, show_default=True,
              help="The intervals' level.")
@click.option("--compare", is_flag=True, help="Put the reports given as arguments side by side; for two reports of "
              "the same split, their paired bootstrap difference.")
@click.option("--no-plots", is_flag=True, help="Do not write the PNG plots.")
@click.option("--api-base", help="Judge: base URL of an OpenAI-compatible (or other) server.")
@click.option("--temperature", type=float, default=0.0, show_default=True, help="Judge: sampling temperature.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=4096, show_default=True,
              help="Judge: most completion tokens per answer.")
@click.option("--seed", type=int, default=0, show_default=True, help="Judge: the seed sent.")
@click.option("--no-schema", is_flag=True, help="Judge: do not send a JSON-schema response_format.")
@request_options("Judge: ")
def eval_(paths, out, scores_path, judge, prm_server, prm_model, step_separator, split_name, taxonomy_path,
          threshold, sweep, sweep_metric, protocol, label_rule, resamples, bootstrap_seed, confidence, compare,
          no_plots, api_base, temperature, max_tokens, seed, no_schema, concurrency, timeout, rpm, tpm, cache_path,
          no_cache, price_in, price_out, max_cost) -> None:
    """Score a PRM or an LLM judge on a split (PRMBench's PRMScore, ProcessBench's F1); or --compare reports."""
    from injector.evaluate import (DEFAULT_THRESHOLD, BootstrapSettings, ScoresFile, compare as compare_reports,
                                   evaluate, write_comparison)
    from injector.evaluate.protocols import rule_for_model

    settings = BootstrapSettings(resamples, bootstrap_seed, confidence) if resamples else None
    if compare:
        table = compare_reports(paths, settings)
        click.echo(table, nl=False)
        if out:
            click.echo(f"wrote {write_comparison(out, table)}", err=True)
        return
    if len(paths) != 1:
        raise click.UsageError("give one SPLIT to evaluate (or --compare REPORT...)")
    if not out:
        raise click.UsageError("give --out DIR, the report directory")
    if sum(option is not None for option in (scores_path, judge, prm_server)) != 1:
        raise click.UsageError("give exactly one of --scores FILE, --judge MODEL and --prm-server URL")
    if (prm_server is None) != (prm_model is None):
        raise click.UsageError("--prm-server and --prm-model go together")
    if (price_in is None) != (price_out is None):
        raise click.UsageError("give both --price-in and --price-out (dollars per million tokens)")
    if judge and (threshold is not None or sweep):
        raise click.UsageError("a judge answers correct or incorrect per step: --threshold and --sweep do not apply")
    if label_rule and threshold is not None:
        raise click.UsageError("give --label-rule or --threshold, not both")
    if prm_model and not label_rule and threshold is None and rule_for_model(prm_model):
        label_rule = rule_for_model(prm_model)
        click.echo(f"note: --label-rule {label_rule}, the rule PRMBench's wrapper of {prm_model} uses", err=True)
    scorer: Any
    if scores_path:
        scorer = ScoresFile(scores_path)
    elif judge:
        from injector.engines import LLMEngine, from_model
        from injector.evaluate.judge import LLMJudge

        engine = from_model(judge, api_base=api_base, temperature=temperature, max_tokens=max_tokens,
                            use_schema=not no_schema, timeout=timeout, rpm=rpm, tpm=tpm, use_cache=not no_cache,
                            cache_path=cache_path, price_in=price_in, price_out=price_out)
        if not isinstance(engine, LLMEngine):
            raise click.UsageError("--judge needs an LLM (a litellm model string), not the offline engine")
        scorer = LLMJudge(engine, concurrency=concurrency, max_cost=max_cost, seed=seed,
                          on_progress=_every_ten_seconds(lambda done, total: f"judged {done} of {total} solutions"))
    else:
        from injector.engines.cache import RequestCache
        from injector.evaluate.prm_server import PRMServer

        scorer = PRMServer(prm_server, prm_model, separator=step_separator, concurrency=concurrency, timeout=timeout,
                           cache=None if no_cache else RequestCache(cache_path),
                           on_progress=_every_ten_seconds(lambda done, total: f"scored {done} of {total} solutions"))
    result = evaluate(paths[0], scorer, out=out, split_name=split_name, taxonomy=taxonomy_path,
                      threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
                      sweep_metric=sweep_metric if sweep else None, plots=not no_plots, protocol=protocol,
                      label_rule=label_rule, bootstrap=settings)
    click.echo(result.split.describe(), err=True)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo((Path(out) / "metrics.md").read_text(encoding="utf-8"), nl=False)
    click.echo(f"wrote {', '.join(str(Path(out) / name) for name in result.files)}", err=True)
