"""`inject run`: options into a `RunRequest`, then `api.run` (or `api.dry_run`)."""
from __future__ import annotations

from typing import Any

import click

from injector.cli.base import EXIT_INTERRUPTED, examples, invocation, main
from injector.cli.config_file import config_option, from_option
from injector.cli.options import (InputOptions, engine_fields, input_options, output_mode_option, request_options,
                                  verbose_option)
from injector.model.choices import CLIENTS, OFFLINE_MODEL
from injector.util.errors import BatchesPending, BudgetExceeded

class EngineModelOption(click.Option):
    """`--model`, whose help lists the registered engine names, read from the registry only when help is shown."""

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        from injector.engines.registry import named_kinds

        record = super().get_help_record(ctx)
        return None if record is None else (record[0], record[1].replace("{engines}", ", ".join(named_kinds())))


@main.command(epilog=examples(
    "inject run --category circular_logic                  # offline engine, bundled sample, no key",
    "inject run --category all --model gpt-4o --dry-run    # units, tokens, estimated cost; sends nothing",
    "inject run --category all --model gpt-4o --max-cost 20 --rpm 450 --out runs/gpt4o",
    "inject run --category redundancy --model openai/qwen --api-base http://127.0.0.1:8000/v1",
    "inject run --category all --model gpt-4o --rpm 450 --out runs/big --executor ray   # Ray workers"))
@config_option
@from_option("run", "out", "its run directory")
@input_options
@output_mode_option
@click.option("--out", type=click.Path(file_okay=False), help="Run directory. Default: runs/<UTC date-time>.")
@click.option("--model", envvar="INJECT_MODEL", show_envvar=True, cls=EngineModelOption,
              help="An engine's name ({engines}; `offline`, rule-based with no LLM, is the default) or any litellm "
                   "model string: gpt-4o, anthropic/..., "
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
@request_options("", max_cost_help="The run directory's budget in dollars over all its invocations (the manifest "
                 "keeps the total): a unit starts only while the total cannot pass it; then exit 3, and the same "
                 "command with a higher --max-cost continues.")
@click.option("--max-cost-per-invocation", type=click.FloatRange(min=0), metavar="DOLLARS",
              help="Stop cleanly (exit 3, resumable) once this invocation has spent this many dollars.")
@verbose_option
@click.option("--log-prompts", is_flag=True, help="Keep every request sent and every answer received in "
              "RUN/prompts.jsonl (keys redacted), for inspection.")
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
                   "prm-injector[ray]). --concurrency, --rpm, --tpm and the budget are divided among the workers.")
@click.option("--ray-workers", type=click.IntRange(min=1), metavar="N",
              help="With --executor ray: workers (Ray actors). Default: one per CPU of the Ray cluster; never more "
                   "than --concurrency.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True, metavar="N",
              help="Worker processes, each over its own shard of the units (use every core: validation is CPU-bound). "
                   "--concurrency, --rpm, --tpm and the budget are divided among them.")
def run(inputs: InputOptions, **options) -> None:
    """Inject errors into trajectories and write candidates and rejects to a run directory."""
    from injector import api, split_by_support
    from injector import dry_run as plan_run
    from injector.runner.progress import dry_run_table

    request = _run_request(options)
    taxonomy, selected, source = inputs.load()
    if not request.engine.model and request.engine.deployments is None:
        click.echo("no model given: using the offline rule-based engine (--model offline); for an LLM pass "
                   "--model, e.g. --model gpt-4o, or set INJECT_MODEL", err=True)
    engine = api.build_engine(request)
    executor = api.units_executor(request)
    for category_id, reason in split_by_support(engine, selected)[1].items():
        click.echo(f"skipping {category_id}: {reason}; pass --model with an LLM to include it", err=True)
    spec = api.run_spec(request, taxonomy, selected, inputs.limit)
    if request.dry_run:
        click.echo(dry_run_table(plan_run(source, spec, engine), rpm=request.engine.rpm, tpm=request.engine.tpm))
        return
    result = _run_units(source, spec, engine, executor)
    if result is not None:
        _summary(result, source, executor if request.executor == "ray" else None)


def _run_request(options: dict[str, Any]) -> Any:
    """The command's options as a `RunRequest` (its engine's settings in it)."""
    from injector import api

    if click.get_current_context().get_parameter_source("concurrency") is click.core.ParameterSource.DEFAULT:
        options["concurrency"] = None  # the request's default: 16, or 5000 with --batch
    engine = api.make_request(
        api.EngineSettings, model=options.pop("model"), api_bases=options.pop("api_base"),
        deployments=options.pop("deployments_file"), temperature=options.pop("temperature"),
        max_tokens=options.pop("max_tokens"), use_schema=not options.pop("no_schema"), client=options.pop("client"),
        **engine_fields(options))
    options["wait"] = not options.pop("no_wait")
    return api.make_request(api.RunRequest, engine=engine, **options)


def _run_units(source: Any, spec: Any, engine: Any, executor: Any) -> Any:
    """The run, with its progress shown; None when batches are still pending (the same command collects them)."""
    from injector import run as run_injection
    from injector.runner.progress import ProgressDisplay, summary_table

    command = invocation()
    display = ProgressDisplay()
    try:
        with display:
            return run_injection(source, spec, engine, on_progress=display.update, command=command,
                                 executor=executor, on_start=_save_options)
    except BudgetExceeded:
        click.echo(summary_table(display.shown()), err=True)  # what was done before the stop, as on exit 0
        raise
    except KeyboardInterrupt:
        from injector.util.redaction import redact_command

        click.echo(summary_table(display.shown()), err=True)
        resume = " ".join(redact_command(command)) + ("" if "--out" in command else f" --out {spec.out}")
        click.echo(f"interrupted; nothing written is lost. Resume with: {resume}", err=True)
        raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
    except BatchesPending as pending:
        click.echo(f"{spec.out}: {pending}", err=True)
        return None


def _save_options(run_dir: Any) -> None:
    """The run holds its directory: its options go to RUN/config.yaml (what `--from RUN` reads)."""
    from injector.cli.config_file import write_saved_options

    write_saved_options(run_dir, "run")


def _summary(result: Any, source: Any, ray_executor: Any) -> None:
    """What the run did, on stderr, and where it wrote, on stdout; exit 5 when the provider was unreachable."""
    from injector.runner.progress import summary_table

    counts = result.manifest.counts
    click.echo(source.describe(), err=True)
    click.echo(summary_table(result.progress), err=True)
    if ray_executor is not None:
        click.echo(ray_executor.last_run.describe(), err=True)
    click.echo(
        f"{result.out_dir}: {counts.candidates} candidates, {counts.rejects} rejects "
        f"({result.progress.done} new, {result.progress.skipped_existing} already there)"
    )
    if result.manifest.config.get("engine") == "offline" and counts.candidates:
        click.echo("the offline engine's candidates are smoke-test negatives, not benchmark-grade: see "
                   "docs/offline-engine-quality.md; for a benchmark pass --model", err=True)
    if result.progress.provider_unreachable():
        from injector.util.errors import ProviderUnreachable

        raise ProviderUnreachable("no unit produced a candidate and some failed transiently (provider unreachable; "
                                  "see the summary); exit 5, run the same command again to retry them")
