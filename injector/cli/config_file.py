"""`--config FILE`: a command's options from a YAML mapping, flags overriding the file. The file fills click's
`default_map`, so its values pass the same conversions and checks as the flags, and then the same request model
(`RunRequest`); a key is an option's flag without its dashes (`max-cost`, `api-base`, `category`)."""
from __future__ import annotations

from typing import Any

import click

MAX_CONFIG_BYTES = 1024 * 1024


def _load(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    import yaml

    from injector.util.safe_files import read_text

    try:
        data = yaml.safe_load(read_text(value, MAX_CONFIG_BYTES))
    except OSError as exc:
        raise click.BadParameter(f"{value}: cannot read it ({exc.strerror or exc})", ctx, param) from None
    except UnicodeDecodeError:
        raise click.BadParameter(f"{value}: not UTF-8 text; save it as UTF-8", ctx, param) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{value}:{mark.line + 1}" if mark is not None else value
        raise click.BadParameter(f"{where}: not YAML ({getattr(exc, 'problem', None) or exc})", ctx, param) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise click.BadParameter(f"{value}: expected a mapping of options (e.g. `model: gpt-4o`), found "
                                 f"{type(data).__name__}", ctx, param)
    ctx.default_map = {**(ctx.default_map or {}), **_by_parameter(ctx, value, data)}
    return value


def _by_parameter(ctx: click.Context, path: str, data: dict[Any, Any]) -> dict[str, Any]:
    """The file's options keyed by click's parameter names, multiple-value options as lists."""
    names: dict[str, click.Parameter] = {}
    for parameter in ctx.command.params:
        if isinstance(parameter, click.Option) and parameter.name not in ("config", "help"):
            for flag in parameter.opts:
                names[flag.lstrip("-")] = names[flag.lstrip("-").replace("-", "_")] = parameter
    mapped: dict[str, Any] = {}
    for key, value in data.items():
        found = names.get(str(key))
        if found is None or found.name is None:
            known = ", ".join(sorted({flag.lstrip("-") for p in ctx.command.params if isinstance(p, click.Option)
                                      and p.name not in ("config", "help") for flag in p.opts if flag.startswith("--")}))
            raise click.UsageError(f"{path}: unknown option {key!r}; the options of `inject {ctx.command.name}` are: "
                                   f"{known}", ctx)
        if found.multiple and not isinstance(value, list):
            value = [value]
        mapped[found.name] = value
    return mapped


def config_option(function: Any) -> Any:
    """`--config FILE`, read before the other options so that they override it."""
    return click.option("--config", type=click.Path(dir_okay=False), is_eager=True, expose_value=False,
                        callback=_load, metavar="FILE",
                        help="Options from a YAML file (keys: the flags without their dashes, e.g. `max-cost: 20`, "
                             "`category: [circular_logic, redundancy]`); flags given as well override it.")(function)
