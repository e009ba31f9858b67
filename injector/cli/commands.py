"""`inject`: a thin command-line skin over the public API. The group, its error mapping and exit codes are in
`base.py`; each command lives in its own module, registered on the group by importing it here (each imports only
click and the choice lists at the top, so `inject --help` stays fast)."""
from __future__ import annotations

from injector.cli import build, eval_, info, run, verify  # noqa: F401  (each registers its commands on `main`)
from injector.cli.options import add_verbose_to_every_command
from injector.cli.base import (EXIT_BROKEN_PIPE, EXIT_INTERNAL, EXIT_INTERRUPTED, InjectGroup, crash_dir, invocation,
                               main)


def _register_review() -> None:
    # The review command lives with the review app; its module imports only click at the top.
    from injector.curate.review.command import review

    main.add_command(review)


_register_review()
add_verbose_to_every_command(main)

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "InjectGroup", "crash_dir", "invocation", "main"]
