"""The `inject` group: library errors as one-line messages and the documented exit codes (never a bare
traceback), the invocation as typed, and the helpers every command module shares."""
from __future__ import annotations

import logging
import os
import sys
import tempfile
import traceback
from datetime import datetime, timezone
from pathlib import Path

import click

from injector.cli.flags import flag_message
from injector.util.errors import InjectorError
from injector.util.redaction import redact
from injector.util.version import __version__

EXIT_INTERNAL, EXIT_INTERRUPTED = 1, 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what coreutils exit with when the reader of their output went away
def invocation() -> list[str]:
    """The command line of this invocation, as the user typed it (kept in the click context's `meta`)."""
    context = click.get_current_context(silent=True)
    return list(context.meta.get("invocation", ["inject"])) if context is not None else ["inject"]


class InjectGroup(click.Group):
    """Turns library errors into one-line messages and the documented exit codes, never a bare traceback."""

    def make_context(self, info_name, args, parent=None, **extra):
        # Keep the arguments as given, for manifests and cards ("the command that reproduces it"); `meta` is
        # shared by every context of this invocation.
        given = ["inject", *args]
        context = super().make_context(info_name, args, parent=parent, **extra)
        context.meta.setdefault("invocation", given)
        return context

    def main(self, args=None, *pargs, **kwargs):
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
            click.echo(redact(f"error: {flag_message(str(exc))}"), err=True)
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



def examples(*commands: str) -> str:
    """A --help epilog of example commands, kept as written (click's \\b stops it re-wrapping them)."""
    return "Examples:\n\n\b\n" + "\n".join(commands)


@click.group(cls=InjectGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="inject")
def main() -> None:
    """Inject validated process-level errors into fully correct step-by-step solutions."""
    logging.basicConfig(format="warning: %(message)s", level=logging.WARNING)
    from injector.util.redaction import RedactingFilter

    for handler in logging.getLogger().handlers:  # no key reaches the terminal through a log line
        handler.setLevel(logging.WARNING)  # a run's log events (INFO) go to its log.jsonl; --verbose shows them
        if not any(isinstance(existing, RedactingFilter) for existing in handler.filters):
            handler.addFilter(RedactingFilter())


