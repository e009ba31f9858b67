"""Options from YAML: `--config FILE`, `--from DIR` and the effective options every run, verify, build and eval
leaves in its output directory.

A file fills click's `default_map`, so its values pass the same conversions and checks as the flags, and then the
same request model (`RunRequest`, ...); flags given as well override it. A key is an option's flag without its
dashes (`max-cost`, `api-base`, `category`) or an argument's name (`run-dirs`, `paths`). What a command writes
(`saved_options`) is exactly what it reads: `inject run --config RUN/config.yaml` starts another run with the same
options, `inject run --from RUN` continues that one. The file is only read (`yaml.safe_load`, bounded by
`util.safe_files`): nothing it names is imported or executed.
"""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

MAX_CONFIG_BYTES = 1024 * 1024
NOT_SAVED = frozenset({"config", "from_dir", "help", "out", "run_dir", "dry_run", "verbose", "compare", "overwrite"})
"""Parameters left out of a saved configuration: how to read it, where to write (the directory it is in), what
shows instead of doing (a dry run, the terminal log, `--compare`), and leave to replace a split (given each time)."""
UNSET_WHEN_DEFAULT = frozenset({"concurrency", "cue_sample"})
"""Left out while at their default: the command reads "not given" (run's concurrency is 5000 with --batch; a build's
cue sample means nothing beside `no-cues: true`)."""
CONFIG_FILES = {"run": "config.yaml", "verify": "verify-config.yaml", "build": "build-config.yaml",
                "eval": "eval-config.yaml"}
"""Each command's saved options, in its output directory (`verify` writes into the run directory beside `run`)."""


def _yaml_error(path: str, exc: Exception) -> str:
    mark = getattr(exc, "problem_mark", None)
    where = f"{path}:{mark.line + 1}" if mark is not None else path
    return f"{where}: not YAML ({getattr(exc, 'problem', None) or exc})"


def _read_mapping(ctx: click.Context, param: click.Parameter, path: str) -> tuple[dict[Any, Any], dict[str, int]]:
    """The file's mapping and each key's line (a `BadParameter` naming FILE[:LINE] for anything else)."""
    import yaml

    from injector.util.safe_files import read_text
    from injector.util.errors import UserError

    try:
        text = read_text(path, MAX_CONFIG_BYTES)
        data, node = yaml.safe_load(text), yaml.compose(text)
    except (OSError, UserError) as exc:
        raise click.BadParameter(f"{path}: cannot read it ({getattr(exc, 'strerror', None) or exc})", ctx,
                                 param) from None
    except UnicodeDecodeError:
        raise click.BadParameter(f"{path}: not UTF-8 text; save it as UTF-8", ctx, param) from None
    except yaml.YAMLError as exc:
        raise click.BadParameter(_yaml_error(path, exc), ctx, param) from None
    if data is None:
        return {}, {}
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise click.BadParameter(f"{path}:1: expected a mapping of options (e.g. `model: gpt-4o`), found "
                                 f"{type(data).__name__}", ctx, param)
    lines = {str(key.value): key.start_mark.line + 1 for key, _ in node.value}
    return data, lines


def _apply(ctx: click.Context, param: click.Parameter, path: str) -> None:
    data, lines = _read_mapping(ctx, param, path)
    ctx.default_map = {**(ctx.default_map or {}), **_by_parameter(ctx, path, data, lines)}


def _load(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None:
        _apply(ctx, param, value)
    return value


def _keys(parameter: click.Parameter) -> list[str]:
    """The keys that name `parameter` in a file: its long flags without dashes (or an argument's name), with `_`
    or `-`."""
    if isinstance(parameter, click.Argument):
        names = [str(parameter.name).replace("_", "-")]
    else:
        names = [flag.lstrip("-") for flag in parameter.opts]
    return [spelling for name in names for spelling in (name, name.replace("-", "_"), name.replace("_", "-"))]


def _negative_flag(parameter: click.Parameter) -> bool:
    """A flag that sets its parameter to False (`--no-cues` for `cues`): a file says `no-cues: true` for it."""
    return isinstance(parameter, click.Option) and parameter.is_flag and parameter.flag_value is False


def _settable(ctx: click.Context) -> list[click.Parameter]:
    return [parameter for parameter in ctx.command.params
            if isinstance(parameter, (click.Option, click.Argument)) and parameter.name not in ("config", "from_dir",
                                                                                               "help")]


def _by_parameter(ctx: click.Context, path: str, data: dict[Any, Any], lines: dict[str, int]) -> dict[str, Any]:
    """The file's options keyed by click's parameter names, each checked by the option's own type (so a bad value
    names FILE:LINE)."""
    names = {key: parameter for parameter in _settable(ctx) for key in _keys(parameter)}
    mapped: dict[str, Any] = {}
    for key, value in data.items():
        where = f"{path}:{lines.get(str(key), 1)}"
        found = names.get(str(key))
        if found is None or found.name is None:
            known = ", ".join(sorted({_keys(parameter)[0] for parameter in _settable(ctx)}))
            raise click.UsageError(f"{where}: unknown option {key!r}; the options of `inject {ctx.command.name}` "
                                   f"are: {known}", ctx)
        if _negative_flag(found) and isinstance(value, bool):  # `no-cues: true` sets the option to False
            value = not value
        if (found.multiple or found.nargs == -1) and not isinstance(value, list):
            value = [value]
        try:
            found.type_cast_value(ctx, value)
        except click.BadParameter as exc:
            raise click.UsageError(f"{where}: {key}: {exc.message}", ctx) from None
        mapped[found.name] = value
    return mapped


def config_option(function: Any) -> Any:
    """`--config FILE`, read before the other options so that they override it."""
    return click.option("--config", type=click.Path(dir_okay=False), is_eager=True, expose_value=False,
                        callback=_load, metavar="FILE",
                        help="Options from a YAML file (keys: the flags without their dashes, e.g. `max-cost: 20`, "
                             "`category: [circular_logic, redundancy]`); flags given as well override it.")(function)


def from_option(command: str, directory_parameter: str, what: str) -> Any:
    """`--from DIR`: the options `command` saved in DIR (its `CONFIG_FILES` entry), DIR itself as the command's
    `directory_parameter` (its output); flags given as well override them."""
    name = CONFIG_FILES[command]

    def load(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        path = Path(value) / name
        if not path.is_file() and not path.is_symlink():
            found = [f"`inject {other} --from`" for other, file in CONFIG_FILES.items() if (Path(value) / file).is_file()]
            raise click.BadParameter(f"{value}: holds no {name} (the options `inject {command}` saves in {what})"
                                     + (f"; it has {' or '.join(found)}'s" if found else ""), ctx, param)
        _apply(ctx, param, str(path))
        ctx.default_map = {**(ctx.default_map or {}), directory_parameter: value}
        return value

    def decorate(function: Any) -> Any:
        return click.option("--from", "from_dir", type=click.Path(file_okay=False), is_eager=True,
                            expose_value=False, callback=load, metavar="DIR",
                            help=f"Run again with the options saved in DIR/{name} (written to {what} by every "
                                 f"`inject {command}`), into DIR; flags given as well override them.")(function)

    return decorate


def saved_options(ctx: click.Context) -> dict[str, Any]:
    """This invocation's effective options as a `--config` file holds them (defaults, environment and file values
    included; those not set, where to write, and secrets left out)."""
    from injector.util.redaction import redact

    def plain(value: Any) -> Any:
        if isinstance(value, (tuple, list)):
            return [plain(item) for item in value]
        if isinstance(value, Path):
            return redact(str(value))
        return redact(value) if isinstance(value, str) else value

    options: dict[str, Any] = {}
    for parameter in _settable(ctx):
        if parameter.name in NOT_SAVED or parameter.name not in ctx.params:
            continue
        if parameter.name in UNSET_WHEN_DEFAULT and \
                ctx.get_parameter_source(parameter.name) is click.core.ParameterSource.DEFAULT:
            continue
        value = ctx.params[parameter.name]
        if _negative_flag(parameter):
            value = not value  # `no-cues: true` when the flag was given
        if value is None:
            continue
        options[_keys(parameter)[0]] = plain(value)
    return options


def write_saved_options(directory: str | Path, command: str) -> Path:
    """Write this invocation's options to DIR/<its CONFIG_FILES entry>, atomically; the path."""
    import yaml

    from injector.util.errors import WriteFailed
    from injector.util.safe_files import write_replacing
    from injector.util.version import __version__

    ctx = click.get_current_context()
    path = Path(directory) / CONFIG_FILES[command]
    stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
    header = (f"# The options of the last `inject {command}` here (inject {__version__}, {stamp}). `inject {command} "
              f"--from {directory}` runs it again into {directory}; `--config {path}` reads the same keys.\n")
    body = yaml.safe_dump(saved_options(ctx), sort_keys=False, allow_unicode=True, default_flow_style=None)
    try:
        write_replacing(path, (header + body).encode("utf-8"))
    except OSError as exc:
        raise WriteFailed(path, exc) from None
    return path
