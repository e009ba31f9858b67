"""`inject eval`: score a PRM or an LLM judge on a split, or compare reports."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from injector.cli.base import examples, main
from injector.cli.config_file import config_option, from_option
from injector.cli.options import engine_fields, judge_options, present, request_options, verbose_option

def _every_ten_seconds(line):
    """A progress callback that prints `line(*args)` to stderr at most every 10 s, and at the end."""
    import time

    last = [time.monotonic()]

    def show(done: int, total: int) -> None:
        if done == total or time.monotonic() - last[0] >= 10:
            last[0] = time.monotonic()
            click.echo(line(done, total), err=True)

    return show


@main.command("eval", epilog=examples(
    "inject eval splits/demo --scores data/demo_scores.jsonl --out reports/demo",
    "inject eval splits/v1 --split test --judge gpt-4o --max-cost 5 --out reports/gpt4o",
    "inject eval PRMBench/data/ --prm-server http://127.0.0.1:8000 --prm-model Qwen/Qwen2.5-Math-PRM-7B --out r/qwen",
    "inject eval ProcessBench/math.jsonl --scores my_prm.jsonl --sweep --sweep-metric processbench --out r/mine",
    "inject eval --compare reports/gpt4o r/qwen",
    "inject eval --from reports/gpt4o --split test          # again, with the options saved in the report"))
@config_option
@from_option("eval", "out", "the report directory")
@verbose_option
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
@click.option("--sweep", is_flag=True, help="Choose the threshold on a 20% dev subset (by a hash of the ids) and "
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
@judge_options("Judge: ", temperature=0.0, temperature_help="sampling temperature.", seed_help="the seed sent.")
@request_options("Judge: ")
def eval_(paths, compare, **options) -> None:
    """Score a PRM or an LLM judge on a split (PRMBench's PRMScore, ProcessBench's F1); or --compare reports."""
    from injector import api

    if compare:
        _compare(paths, options)
        return
    if len(paths) != 1:
        raise click.UsageError("give one SPLIT to evaluate (or --compare REPORT...)")
    request = api.make_request(api.EvalRequest, **_eval_fields(paths[0], options))
    if request.model_label_rule:
        click.echo(f"note: --label-rule {request.model_label_rule}, the rule PRMBench's wrapper of "
                   f"{request.prm_model} uses", err=True)
    result = _evaluate_logged(request)
    out = request.report_dir
    click.echo(result.split.describe(), err=True)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo((out / "metrics.md").read_text(encoding="utf-8"), nl=False)
    click.echo(f"wrote {', '.join(str(out / name) for name in result.files)}", err=True)


def _evaluate_logged(request: Any) -> Any:
    """The evaluation, logged to OUT/log.jsonl, its options saved to OUT/eval-config.yaml once the report (or a
    judge's journal, when it stopped) is there."""
    from injector import api
    from injector.cli.config_file import write_saved_options
    from injector.runner.run_log import command_log, event
    from injector.util.errors import BudgetExceeded, NothingMeasured, ProviderUnreachable

    out = request.report_dir
    done = "judged" if request.judge else "scored"
    with command_log(out, "eval", split=str(request.split), scorer=request.judge or request.prm_model or "scores"):
        try:
            result = api.evaluate(request, on_progress=_every_ten_seconds(
                lambda count, total: f"{done} {count} of {total} solutions"))
        except (BudgetExceeded, NothingMeasured, ProviderUnreachable, KeyboardInterrupt):
            if out.is_dir():  # a judge's journal is there: `--from` continues it
                write_saved_options(out, "eval")
            raise
        write_saved_options(out, "eval")
        event("eval_summary", f"{done} {len(result.split.items)} solutions; wrote {', '.join(result.files)}",
              solutions=len(result.split.items), files=result.files)
    return result


def _bootstrap(options: dict[str, Any]) -> Any:
    """The intervals' settings the bootstrap options give (None: `--bootstrap 0`, no intervals)."""
    from injector.evaluate import BootstrapSettings

    resamples, seed, level = options.pop("resamples"), options.pop("bootstrap_seed"), options.pop("confidence")
    return BootstrapSettings(resamples, seed, level) if resamples else None


def _compare(paths: tuple[str, ...], options: dict[str, Any]) -> None:
    """`--compare REPORT...`: the reports side by side, also written to --out when given."""
    from injector import api

    table = api.compare(paths, _bootstrap(options))
    click.echo(table, nl=False)
    if options["out"]:
        click.echo(f"wrote {api.write_comparison(options['out'], table)}", err=True)


def _eval_fields(split: str, options: dict[str, Any]) -> dict[str, Any]:
    """The command's options as `EvalRequest` fields."""
    bootstrap = _bootstrap(options)
    options.update(engine_fields(options))
    options.update(use_schema=not options.pop("no_schema"), plots=not options.pop("no_plots"),
                   scores=options.pop("scores_path"), taxonomy=options.pop("taxonomy_path"))
    return {**present(options), "split": split, "bootstrap": bootstrap}
