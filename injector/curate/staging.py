"""Writing a split all or nothing: into a new directory beside `--out`, then renamed into place."""
from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path

from injector.util.errors import UserError


def staging_dir(out: Path) -> Path:
    """A new empty directory beside `out` (a resolved path; the same file system, so a rename moves it); UserError
    if none can be made."""
    parent = out.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        while True:
            staging = parent / f".{out.name}.building-{secrets.token_hex(4)}"
            try:
                staging.mkdir()  # a plain mkdir, so the split gets the user's usual permissions
                return staging
            except FileExistsError:
                continue
    except OSError as exc:
        raise UserError(f"{out}: cannot create the split beside it in {parent} ({exc.strerror or exc}); choose a "
                        "writable `out`") from None


def move_into_place(staging: Path, out: Path) -> None:
    """Rename `staging` to `out`; an existing `out` is renamed aside first and removed once the new one is in.

    Between the two renames `out` is briefly absent; if the second rename fails the old one is put back. An
    existing empty `out` is kept (it may be the current directory, or have permissions of its own): the staged
    entries are renamed into it, and back out if one fails.
    """
    if not out.exists():
        os.rename(staging, out)
        return
    if not any(out.iterdir()):
        moved: list[Path] = []
        try:
            for entry in sorted(staging.iterdir(), key=lambda p: p.name == "README.md"):  # the card last
                os.rename(entry, out / entry.name)
                moved.append(entry)
        except OSError:
            for entry in moved:
                os.rename(out / entry.name, entry)
            raise
        return
    old = staging.with_name(staging.name.replace(".building-", ".replaced-"))
    os.rename(out, old)
    try:
        os.rename(staging, out)
    except OSError:
        os.rename(old, out)
        raise
    shutil.rmtree(old, ignore_errors=True)
