"""The one way to open the files of a run directory someone else may have made (received, unpacked, shared).

A received directory may hold anything under a known name: a symlink to a file of the user's (`verify.jsonl ->
~/.bashrc`, which an append would cut and extend), a FIFO (a read that never returns), `/dev/zero` (a read that
never ends). So every side file is opened here: never through a final symlink (`O_NOFOLLOW`), only when `fstat`
says it is a regular file, and read only up to a size cap. Names derived from record content go through
`is_file_safe_id` before they become paths.
"""
from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import IO, Any

from injector.util.errors import UserError

MAX_SIDE_FILE_BYTES = 512 * 1024 * 1024
"""Largest side file read whole (verify.jsonl, rejects.jsonl, batches.jsonl); real ones are a few MB."""
MAX_MANIFEST_BYTES = 16 * 1024 * 1024
"""Largest manifest.json / verify-summary.json read (real ones are a few KB)."""

_SAFE_ID = re.compile(r"[a-z][a-z0-9_]{0,63}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # a FIFO opened for reading must not block the open itself


class NotARegularFile(UserError):
    """A run-directory name that is a symlink, a FIFO, a device or a directory, or a file past its size cap."""


def is_file_safe_id(name: str) -> bool:
    """Whether `name` may become a file name: a category id (`^[a-z][a-z0-9_]*$`, at most 64 characters)."""
    return isinstance(name, str) and _SAFE_ID.fullmatch(name) is not None


_RUN_DIRECTORY_HINT = ("a run directory holds only regular files under its own names (replace it with a regular file, "
                       "or move it aside)")
_NAMED_FILE_HINT = "only regular files are read (never a FIFO or a device); give a regular file, or move it aside"


def _refuse(path: Path, what: str, hint: str = _RUN_DIRECTORY_HINT) -> NotARegularFile:
    return NotARegularFile(f"{path}: {what}; {hint}")


def _checked(fd: int, path: Path, max_bytes: int | None, hint: str = _RUN_DIRECTORY_HINT) -> os.stat_result:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise _refuse(path, "not a regular file (a FIFO, a device or a directory)", hint)
    if max_bytes is not None and info.st_size > max_bytes:
        os.close(fd)
        raise _refuse(path, f"{info.st_size:,} bytes, more than the {max_bytes:,} accepted for this file")
    return info


def open_fd(path: str | Path, flags: int, max_bytes: int | None = None, mode: int = 0o644) -> int:
    """`os.open` that follows no final symlink and accepts only a regular file (checked on the open descriptor,
    so a swap between check and use changes nothing); `NotARegularFile` otherwise."""
    path = Path(path)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _NONBLOCK | getattr(os, "O_CLOEXEC", 0), mode)
    except OSError as exc:
        if path.is_symlink():
            raise _refuse(path, "a symbolic link") from None
        raise exc
    _checked(fd, path, max_bytes)
    if _NONBLOCK:
        os.set_blocking(fd, True)
    return fd


def open_named_file(path: str | Path) -> IO[bytes]:
    """A file the user named (or one found in a directory they named), opened for binary reading: symlinks are
    followed (the user's own layout), but only a regular file is read: a FIFO would block forever, a device such
    as `/dev/zero` never end. `NotARegularFile` otherwise; OSError when it cannot be opened."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | _NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    _checked(fd, path, None, _NAMED_FILE_HINT)
    if _NONBLOCK:
        os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def open_read(path: str | Path, max_bytes: int | None = MAX_SIDE_FILE_BYTES, text: bool = False) -> IO[Any]:
    """A regular file of a run directory, opened for reading (binary unless `text`: UTF-8)."""
    fd = open_fd(path, os.O_RDONLY, max_bytes)
    return os.fdopen(fd, "r", encoding="utf-8") if text else os.fdopen(fd, "rb")


def read_bytes(path: str | Path, max_bytes: int = MAX_SIDE_FILE_BYTES) -> bytes:
    """The whole of a regular file no larger than `max_bytes` (re-checked while reading: it may grow)."""
    with open_read(path, max_bytes) as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _refuse(Path(path), f"more than the {max_bytes:,} bytes accepted for this file")
    return data


def read_text(path: str | Path, max_bytes: int = MAX_MANIFEST_BYTES) -> str:
    """`read_bytes` decoded as UTF-8 (a leading BOM dropped); UnicodeDecodeError for bytes that are not."""
    return read_bytes(path, max_bytes).decode("utf-8").removeprefix("\ufeff")


def open_append(path: str | Path) -> IO[bytes]:
    """A run-directory file opened for appending (created when missing), never through a symlink."""
    return os.fdopen(open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab")


def open_write(path: str | Path, truncate: bool = True) -> IO[bytes]:
    """A run-directory file opened for writing (created when missing), never through a symlink; truncated only
    after the descriptor is known to be a regular file."""
    fd = open_fd(path, os.O_WRONLY | os.O_CREAT)
    if truncate:
        os.ftruncate(fd, 0)
    return os.fdopen(fd, "wb")


def require_regular_or_missing(path: str | Path) -> None:
    """Refuse a name that exists but is no regular file (before a library such as sqlite3 opens it by name)."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise _refuse(path, "a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(path, "not a regular file (a FIFO, a device or a directory)")


def create_temporary(path: str | Path) -> IO[bytes]:
    """`path` created afresh for writing (whatever stood under that name is unlinked first, a symlink included:
    unlinking removes the link, never its target), with O_EXCL so no link can be planted between the two."""
    path = Path(path)
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o644)
    return os.fdopen(fd, "wb")


def write_replacing(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` atomically: through a fresh `path.tmp` (see `create_temporary`), then `os.replace`
    (which replaces a symlink at `path` itself, never the file it points at)."""
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    try:
        with create_temporary(temporary) as handle:
            handle.write(data)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
