"""`inject verify`: a blind judge's verdict on every candidate of a run."""
from __future__ import annotations

from typing import Any

import click

from injector.cli.base import EXIT_INTERRUPTED, examples, main
from injector.cli.config_file import config_option, from_option
from injector.cli.options import engine_fields, judge_options, present, request_options, verbose_option

@main.command(epilog=examples(
    "inject verify runs/gpt4o --model gpt-4o --dry-run          # critiques, tokens, estimated cost; sends nothing",
    "inject verify runs/gpt4o --model gpt-4o --max-cost 5 --votes 3",
    "inject verify runs/qwen --model openai/qwen --api-base http://127.0.0.1:8000/v1 --rollouts 8",
    "inject verify --from runs/gpt4o --max-cost 10             # again, with the options saved in the run"))
@config_option
@from_option("verify", "run_dir", "the run directory")
@verbose_option
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--model", envvar="INJECT_VERIFY_MODEL", show_envvar=True, required=True,
              help="The judge: any litellm model string (gpt-4o, anthropic/..., openai/NAME with --api-base).")
@click.option("--votes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Critiques per solution for candidates whose first verdict is not `confirmed`; the majority's "
                   "verdict wins, a tie is `disputed`.")
@click.option("--votes-all", is_flag=True, help="Take --votes critiques of every candidate, confirmed ones included.")
@click.option("--rollouts", type=click.IntRange(min=0), default=0, show_default=True,
              help="Continuations per prefix (before and through the first error step) for candidates whose final "
                   "answer changed and whose question did not; 0: none.")
@click.option("--rollout-model", help="The model that continues solutions (default: --model; same --api-base).")
@judge_options("", temperature=1.0, temperature_help="sampling temperature of the judge and the rollouts (votes need "
               "it above 0).", seed_help="sample k of a critique is sent seed+k.")
@request_options("")
@click.option("--dry-run", is_flag=True, help="Print the critiques, prompt tokens and estimated cost; send nothing.")
@click.option("--taxonomy", "taxonomy_path", metavar="NAME|PATH",
              help="Take the categories' critique kinds from this taxonomy (default: the one the run recorded).")
def verify(**options) -> None:
    """Triage a run: a blind judge finds the first error of every candidate (and of its original) and gives a
    verdict (RUN/verify.jsonl, RUN/verify-summary.json)."""
    from injector import api
    from injector.triage.verify import plan_table, verify_summary_table

    request = _verify_request(options)
    if request.dry_run:
        click.echo(plan_table(api.plan_verify(request)))
        return
    summary = _verify_logged(request)
    click.echo(verify_summary_table(summary))
    from injector.triage.measured import check_verify_measured

    check_verify_measured(summary)  # every critique unreadable: exit 2 or 5, saying what the judge returned
    if summary.failed and not summary.verified:
        from injector.util.errors import ProviderUnreachable

        raise ProviderUnreachable(f"no candidate was verified and {summary.failed} failed ({summary.failure}); "
                                  "exit 5, run the same command again to retry them")


def _verify_logged(request: Any) -> Any:
    """The pass, logged to RUN/log.jsonl, its options saved to RUN/verify-config.yaml once it ran (a stop by the
    budget or Ctrl-C included; not when it was refused before judging anything)."""
    from injector import api
    from injector.cli.config_file import write_saved_options
    from injector.runner.run_log import command_log, event
    from injector.util.errors import BudgetExceeded

    with command_log(request.run_dir, "verify", model=request.judge.model):
        try:
            summary = api.verify(request, on_progress=_every_ten_seconds())
        except BudgetExceeded:
            write_saved_options(request.run_dir, "verify")
            raise
        except KeyboardInterrupt:
            write_saved_options(request.run_dir, "verify")
            click.echo("interrupted; nothing written is lost. Run the same command again to continue", err=True)
            raise click.exceptions.Exit(EXIT_INTERRUPTED) from None
        write_saved_options(request.run_dir, "verify")
        event("verify_summary", f"verified {summary.verified}, failed {summary.failed}", verified=summary.verified,
              failed=summary.failed, skipped=summary.skipped_existing, cost=summary.usage.cost)
    return summary


def _verify_request(options: dict[str, Any]) -> Any:
    """The command's options as a `VerifyRequest` (the judge's engine settings in it)."""
    from injector import api

    judge = api.make_request(
        api.EngineSettings, model=options.pop("model"), api_bases=options.pop("api_base"),
        temperature=options.pop("temperature"), max_tokens=options.pop("max_tokens"),
        use_schema=not options.pop("no_schema"), **engine_fields(options))
    options["taxonomy"] = options.pop("taxonomy_path")
    return api.make_request(api.VerifyRequest, judge=judge, **present(options))


def _every_ten_seconds() -> Any:
    """A progress callback printing the status line every 10 s: a long pass is not silent."""
    import time

    from injector.triage.verify import verify_status_line

    shown = [time.monotonic()]

    def progress(summary: Any) -> None:
        if time.monotonic() - shown[0] >= 10:
            shown[0] = time.monotonic()
            click.echo(verify_status_line(summary), err=True)

    return progress
