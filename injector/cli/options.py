"""Options several commands share, declared once: the trajectory inputs (`input_options`), the request loop's
(`request_options`: run, verify and eval) and `--output-mode`."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import click

from injector.util.answer_limits import DEFAULT_MAX_ANSWER_BYTES
from injector.model.choices import DEFAULT_OUTPUT_MODE, DUPLICATE_ID_POLICIES, OUTPUT_MODES
from injector.sources.registry import format_names


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
        click.option("--input-format", type=click.Choice(format_names()),
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


REQUEST_ENGINE_OPTIONS = ("timeout", "max_answer_bytes", "rpm", "tpm", "cache_path", "price_in", "price_out")
"""The options of `request_options` that are engine settings under the same names (`no_cache` is `use_cache`)."""


def request_options(who: str, max_cost_help: str | None = None):
    """The request loop's options that `run`, `verify` and `eval` share (concurrency, limits, cache, prices,
    budget), declared once here; `who` prefixes their help ("Judge: "); `max_cost_help` says what `--max-cost` caps
    where it is not one invocation's spend (`run`: the run directory's)."""
    def lead(text: str) -> str:
        text = who + text
        return text[:1].upper() + text[1:]

    options = [
        click.option("--concurrency", type=click.IntRange(min=1), default=16, show_default=True,
                     help=lead("requests in flight.")),
        click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=300, show_default=True,
                     help="Seconds to wait for one answer before it counts as a transient fault."),
        click.option("--max-answer-bytes", type=click.IntRange(min=1024), default=DEFAULT_MAX_ANSWER_BYTES,
                     show_default=True, help="Largest answer read; a larger one is refused unread (answer_too_large)."),
        click.option("--rpm", type=click.FloatRange(min=0, min_open=True), help=lead("requests per minute, at most.")),
        click.option("--tpm", type=click.FloatRange(min=0, min_open=True), help=lead("tokens per minute, at most.")),
        click.option("--cache", "cache_path", type=click.Path(dir_okay=False),
                     help="Request cache file (SQLite). Default: the user cache directory."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the request cache."),
        click.option("--price-in", type=click.FloatRange(min=0),
                     help=lead("dollars per million prompt tokens (models litellm has no price for).")),
        click.option("--price-out", type=click.FloatRange(min=0), help=lead("dollars per million completion tokens.")),
        click.option("--max-cost", type=click.FloatRange(min=0),
                     help=max_cost_help or lead("stop cleanly (exit 3, resumable) once this invocation has spent "
                                                "this many dollars.")),
    ]

    def decorate(function):
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def judge_options(who: str, *, temperature: float, temperature_help: str, seed_help: str):
    """The judge's sampling options that `verify` and `eval --judge` share (server, temperature, tokens, seed,
    schema), declared once; each command gives its temperature default and what its seed and temperature do."""
    def lead(text: str) -> str:
        text = who + text
        return text[:1].upper() + text[1:]

    options = [
        click.option("--api-base", help=lead("base URL of an OpenAI-compatible (or other) server, e.g. "
                                             "http://127.0.0.1:8000/v1.")),
        click.option("--temperature", type=float, default=temperature, show_default=True,
                     help=lead(temperature_help)),
        click.option("--max-tokens", type=click.IntRange(min=1), default=4096, show_default=True,
                     help=lead("most completion tokens per answer.")),
        click.option("--seed", type=int, default=0, show_default=True, help=lead(seed_help)),
        click.option("--no-schema", is_flag=True, help=lead("do not send a JSON-schema response_format.")),
    ]

    def decorate(function):
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def engine_fields(options: dict[str, Any]) -> dict[str, Any]:
    """The engine settings among a command's `request_options` values, taken out of `options`."""
    fields = {name: options.pop(name) for name in REQUEST_ENGINE_OPTIONS}
    fields["use_cache"] = not options.pop("no_cache")
    return fields


def present(options: dict[str, Any]) -> dict[str, Any]:
    """`options` without those not given (None): the request model's defaults apply to them."""
    return {name: value for name, value in options.items() if value is not None}



output_mode_option = click.option(
    "--output-mode", type=click.Choice(OUTPUT_MODES), default=DEFAULT_OUTPUT_MODE, show_default=True,
    help="edits: the model lists only its edits, applied by the toolkit; full: it writes back the whole solution "
         "(multi_solution always writes a whole new solution).")




def _show_log(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    if value:
        from injector.runner.run_log import show_on_terminal

        ctx.call_on_close(show_on_terminal())
    return value


VERBOSE_HELP = ("Show the log on the terminal too (each unit's outcome, the start and the end; run, verify, build and "
                "eval keep it in OUT/log.jsonl).")


def verbose_option(function: Any) -> Any:
    """`--verbose`: the command's log (INFO lines) on stderr too, until the command ends."""
    return click.option("--verbose", is_flag=True, expose_value=False, callback=_show_log,
                        help=VERBOSE_HELP)(function)


def add_verbose_to_every_command(group: click.Group) -> None:
    """`--verbose` on each command of `group` that has none of its own (the commands without a log file too)."""
    for command in group.commands.values():
        if not any(parameter.name == "verbose" for parameter in command.params):
            command.params.append(click.Option(["--verbose"], is_flag=True, expose_value=False, callback=_show_log,
                                               help="Show the toolkit's log lines (INFO) on the terminal."))


class SampleSize(click.ParamType):
    """A per-category sample size: a whole number of at least `least`, or `all` (None: no sample, every row)."""

    name = "sample size"

    def __init__(self, least: int = 10) -> None:
        self.least = least

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | None:
        if value is None or isinstance(value, int) and not isinstance(value, bool) and value >= self.least:
            return value
        if str(value).strip().lower() == "all":
            return None
        try:
            number = int(str(value))
        except ValueError:
            number = None
        if number is None or number < self.least:
            self.fail(f"{value!r}: expected a whole number of at least {self.least}, or `all`", param, ctx)
        return number
