"""`inject`: the command-line skin over the public API."""
from injector.cli.commands import main

__all__ = ["main"]
