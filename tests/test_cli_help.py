"""Every `inject` subcommand's --help ends with examples that name only options the command has, and every
option says what it does."""
from __future__ import annotations

import shlex

import click
import pytest
from click.testing import CliRunner

from injector.cli.commands import main


def visible_commands(command: click.Command = main, path: tuple[str, ...] = ()):
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            if not sub.hidden:
                yield from visible_commands(sub, (*path, name))
    if path:
        yield path, command


COMMANDS = dict(visible_commands())


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_help_shows_examples_that_use_real_options(path):
    result = CliRunner().invoke(main, [*path, "--help"])
    assert result.exit_code == 0, result.output
    examples = result.output.split("Examples:\n", 1)[1].strip().splitlines()
    assert examples, f"inject {' '.join(path)} --help has no example"
    command = COMMANDS[path]
    subcommands = getattr(command, "commands", {})
    options = {opt for param in command.params for opt in param.opts if opt.startswith("-")}
    for example in examples:
        words = shlex.split(example.split("#")[0].split("&&")[0])
        assert words[:len(path) + 1] == ["inject", *path], example
        rest = words[len(path) + 1:]
        if rest and rest[0] in subcommands:  # an example of a group shows one of its commands
            sub = subcommands[rest[0]]
            options, rest = {o for param in sub.params for o in param.opts if o.startswith("-")}, rest[1:]
        unknown = [word for word in rest if word.startswith("--") and word not in options]
        assert unknown == [], f"{example}: no such option {unknown}"


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
def test_every_option_says_what_it_does(path):
    undescribed = [param.opts[0] for param in COMMANDS[path].params
                   if isinstance(param, click.Option) and not param.hidden and not param.help]
    assert undescribed == []
