"""Which images a trajectory may carry, and reading them safely.

An image reference is an http(s) URL (passed on by reference, never fetched by us), a `data:` URL of a raster image,
or a local file. A local file is accepted only when its real path (symlinks resolved) lies under the image base
directory (the input file's directory, or `--images-from DIR`) and its bytes are a PNG, JPEG, GIF or WebP image.
The type always comes from the bytes, never from the name; SVG (which can carry script) is never accepted.
"""
from __future__ import annotations

import base64
import binascii
import os
import re
import stat
from pathlib import Path

from injector.util.errors import InjectorError

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""Largest local image inlined or served (the OpenAI API's per-image limit)."""

RASTER_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_DATA_URL = re.compile(r"data:(image/[a-z+.-]+)(?:;[^,;]*=[^,;]*)*;base64,", re.IGNORECASE)
_HEAD_BYTES = 16


class ImageRefused(InjectorError):
    """An image reference that is not allowed; the message says why and how to fix it."""


def sniff_image_type(head: bytes) -> str | None:
    """The raster MIME type that a file's first bytes show, or None (SVG, text and everything else)."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def is_remote(reference: str) -> bool:
    """An http(s) URL: passed to the model by reference and never fetched by the toolkit."""
    return reference.lower().startswith(("http://", "https://"))


def is_data_url(reference: str) -> bool:
    return reference[:5].lower() == "data:"


def check_data_url(reference: str) -> None:
    """A `data:` URL is allowed only as base64 of a PNG, JPEG, GIF or WebP image whose bytes agree."""
    match = _DATA_URL.match(reference)
    if match is None or match.group(1).lower() not in RASTER_TYPES:
        raise ImageRefused("a data: URL image must be data:image/png|jpeg|gif|webp;base64,... (SVG and other "
                           "types are not sent)")
    declared = match.group(1).lower()
    payload = reference[match.end():match.end() + 24]  # 24 base64 characters decode to the 18 bytes we look at
    try:
        head = base64.b64decode(payload + "=" * (-len(payload) % 4))
    except (binascii.Error, ValueError):
        head = b""
    if sniff_image_type(head) != declared:
        raise ImageRefused(f"a data: URL declares {declared} but its bytes are not a {declared.split('/')[1].upper()} "
                           "image")


def _under(path: str, directory: str) -> bool:
    return os.path.commonpath([path, directory]) == directory


def _read_regular(path: str, limit: int) -> bytes:
    """Up to `limit` bytes of a regular file, opened without following a symlink in the last component (and
    without blocking on a FIFO)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        raise ImageRefused(f"image {path}: cannot open it ({exc.strerror})") from None
    with os.fdopen(descriptor, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ImageRefused(f"image {path}: not a regular file")
        if info.st_size > MAX_IMAGE_BYTES:
            raise ImageRefused(f"image {path}: {info.st_size} bytes, more than the {MAX_IMAGE_BYTES} allowed; "
                               "make it smaller")
        return handle.read(limit)


def resolve_local_image(reference: str, *, relative_to: Path | None, base: Path | None) -> str:
    """The real path of a local image the input names, after checking where it lives and what its bytes are.

    A relative path resolves against `relative_to` (the input file's directory), else against `base`.
    """
    if base is None:
        raise ImageRefused(f"image {reference}: a local path, but this input has no image directory (a Hugging "
                           "Face dataset); embed the image as a data: URL, or allow a directory with "
                           "--images-from DIR")
    if "\0" in reference:
        raise ImageRefused(f"image {reference!r}: a path cannot contain a NUL character")
    real_base = os.path.realpath(base)
    path = Path(reference)  # "~" stays literal: a record does not get to name the user's home
    if not path.is_absolute():
        path = (relative_to or Path(real_base)) / path
    real = os.path.realpath(path)
    if not _under(real, real_base):
        raise ImageRefused(f"image {reference}: resolves to {real}, outside the image directory {real_base}; put "
                           "it there or allow its directory with --images-from DIR")
    if not os.path.exists(real):
        raise ImageRefused(f"image {reference}: no such file ({real}); paths are absolute or relative to the "
                           "input file")
    if sniff_image_type(_read_regular(real, _HEAD_BYTES)) is None:
        raise ImageRefused(f"image {reference}: not a PNG, JPEG, GIF or WebP image by its bytes (SVG is never "
                           "sent); convert it or remove it from the record")
    return real


def checked_url(reference: str) -> str | None:
    """The reference itself when it is an allowed URL (http(s), or a raster data: URL), None when it is a local
    path; any other scheme (file://, ftp://, ...) or a data: URL of another type is `ImageRefused`."""
    if is_remote(reference):
        return reference
    if is_data_url(reference):
        check_data_url(reference)
        return reference
    if "://" in reference:
        raise ImageRefused(f"image {reference[:80]}: only http(s) URLs, data: URLs or local paths are allowed")
    return None


def check_reference(reference: str, *, relative_to: Path | None, base: Path | None) -> str:
    """An image reference as a trajectory keeps it (a local path made real and absolute), or `ImageRefused`."""
    url = checked_url(reference)
    if url is not None:
        return url
    return resolve_local_image(reference, relative_to=relative_to, base=base)


def read_image(path: str | Path, base: Path | None = None) -> tuple[bytes, str]:
    """(bytes, MIME type) of a local raster image, refusing a path through any symlink, a file outside `base`
    (when given) and bytes that are not PNG, JPEG, GIF or WebP."""
    if "\0" in str(path):
        raise ImageRefused(f"image {str(path)!r}: a path cannot contain a NUL character")
    absolute = os.path.abspath(path)
    real = os.path.realpath(absolute)
    if real != absolute:
        raise ImageRefused(f"image {path}: the path goes through a symlink; name the file itself")
    if base is not None and not _under(real, os.path.realpath(base)):
        raise ImageRefused(f"image {path}: outside the image directory {base}")
    data = _read_regular(real, MAX_IMAGE_BYTES + 1)
    kind = sniff_image_type(data[:_HEAD_BYTES])
    if kind is None:
        raise ImageRefused(f"image {path}: not a PNG, JPEG, GIF or WebP image by its bytes")
    return data, kind
