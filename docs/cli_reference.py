"""mkdocs hook: the command reference, one page per `inject` command, rendered from the click commands at build time.

Nothing here is committed as text, so the pages cannot drift from `inject COMMAND --help`: mkdocs.yml names this
file under `hooks:`, and the nav entry `reference/index.md` becomes a section listing every visible command.
"""
from __future__ import annotations

import functools
import inspect
import re

import click

INDEX = "reference/index.md"


def walk(command: click.Command, ctx: click.Context):
    """Every visible command under `command` (itself first), each with its click context, in --help's order."""
    yield ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, click.Context(sub, info_name=name, parent=ctx))


def page_uri(ctx: click.Context) -> str:
    words = ctx.command_path.split()[1:]
    return f"reference/{'-'.join(words) or 'inject'}.md"


@functools.cache
def pages() -> dict[str, tuple[str, str, str]]:
    """{page uri: (title, markdown, one-line summary)} for `inject` and every visible subcommand."""
    from injector.cli import main

    root = click.Context(main, info_name="inject")
    return {page_uri(ctx): (ctx.command_path, render(ctx), _escape(ctx.command.get_short_help_str(limit=120)))
            for ctx in walk(main, root)}


def _text(text: str) -> list[str]:
    """click help text as Markdown: a `\\b` paragraph (kept as written by click) becomes a code block."""
    out = []
    for paragraph in re.split(r"\n\s*\n", inspect.cleandoc(text)):
        if paragraph.startswith("\b"):
            out.append("```text\n" + paragraph.lstrip("\b").strip("\n") + "\n```")
        else:
            out.append(_escape(" ".join(paragraph.split())))
    return out


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("*", "\\*")


def _cell(text: str) -> str:
    return _escape(" ".join(text.split())).replace("|", "\\|")


def _epilog(epilog: str) -> list[str]:
    """The Examples epilog: its `\\b` block of commands as a bash block."""
    out = []
    for block in _text(epilog):
        out.append(block.replace("```text", "```bash", 1) if block.startswith("```text") else block)
    return out


def render(ctx: click.Context) -> str:
    command = ctx.command
    lines = [f"# {ctx.command_path}", ""]
    if command.help:
        lines += [block + "\n" for block in _text(command.help)]
    usage = " ".join([ctx.command_path, *command.collect_usage_pieces(ctx)])
    lines += ["```text", f"Usage: {usage}", "```", ""]
    records = [(param, param.get_help_record(ctx)) for param in command.get_params(ctx)]
    # Arguments have no help text in click: they show in the usage line, not as rows.
    rows = [record for param, record in records if record and not isinstance(param, click.Argument)]
    if rows:
        lines += ["| option | meaning |", "|---|---|"]
        lines += [f"| `{opts}` | {_cell(help_text)} |" for opts, help_text in rows]
        lines.append("")
    if isinstance(command, click.Group):
        lines += ["## Commands", ""]
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                child = click.Context(sub, info_name=name, parent=ctx)
                summary = _escape(sub.get_short_help_str(limit=120))
                lines.append(f"- [`{child.command_path}`]({page_uri(child).split('/')[-1]}): {summary}")
        lines.append("")
    if command.epilog:
        lines += [block + "\n" for block in _epilog(command.epilog)]
    return "\n".join(lines).rstrip("\n") + "\n"


# ---- the mkdocs events ----------------------------------------------------------------------------------------------

def on_config(config, **kwargs):
    """The nav entry that names reference/index.md becomes a section: the index, then one page per command."""
    section = [{"Overview": INDEX}] + [{title: uri} for uri, (title, _, _) in pages().items()]

    def expand(item):
        if isinstance(item, dict):
            return {key: section if value == INDEX else expand(value) for key, value in item.items()}
        if isinstance(item, list):
            return [expand(entry) for entry in item]
        return item

    config["nav"] = expand(config["nav"])
    return config


def on_files(files, config, **kwargs):
    from mkdocs.structure.files import File

    for uri, (_, markdown, _) in pages().items():
        files.append(File.generated(config, uri, content=markdown))
    return files


def on_page_markdown(markdown, page, config, files, **kwargs):
    """The index lists every command with its one-line summary (from the same walk)."""
    if page.file.src_uri != INDEX:
        return markdown
    listing = [f"- [`{title}`]({uri.split('/')[-1]}): {summary}" for uri, (title, _, summary) in pages().items()]
    return markdown.rstrip("\n") + "\n\n" + "\n".join(listing) + "\n"

