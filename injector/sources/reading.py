"""What the record-format readers share: `BadRecord`, reading a (dotted) field with the wrong-type message, and
checking image references.

A reader that finds a record malformed raises `BadRecord(message)`; the stream reports it as `FILE:LINE: message`
(or counts it under `--skip-invalid`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from injector.util.errors import InjectorError
from injector.util.images import ImageRefused, check_reference

FORMAT_HINT = "use --input-format to choose another format"
MISSING: Any = object()
"""What `lookup` returns for a field the record does not have (None is a value records use)."""


class BadRecord(InjectorError):
    """A malformed record; the stream turns it into `InputError(path, line, message)`."""


def lookup(record: Any, dotted: str) -> Any:
    """`record["a"]["b"]` for "a.b" (a number indexes a list), or `MISSING`."""
    value = record
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return MISSING
    return value


def required(record: dict, dotted: str, kinds: tuple[type, ...], needs: str) -> Any:
    """The field at `dotted`, which must be one of `kinds`; `needs` says what the format needs, for the message."""
    value = lookup(record, dotted)
    if value is MISSING:
        raise BadRecord(f"missing field '{dotted}' ({needs}); {FORMAT_HINT}")
    if not isinstance(value, kinds):
        wanted = " or ".join("null" if kind is type(None) else kind.__name__ for kind in kinds)
        raise BadRecord(f"field '{dotted}' must be {wanted}, not {type(value).__name__}")
    return value


def string_steps(steps: list, field: str) -> list[str]:
    """`steps` when it is a non-empty list of strings, else a `BadRecord` naming `field` and the bad step."""
    if not steps:
        raise BadRecord(f"{field} is empty; a trajectory needs at least one step")
    for number, step in enumerate(steps, 1):
        if not isinstance(step, str):
            raise BadRecord(f"{field} step {number} must be a string, not {type(step).__name__}")
    return steps


def resolve_images(images: list[Any], where: str, base: Path | None) -> list[str]:
    """Image references as a trajectory keeps them: URLs as given, a local path as its real, absolute path once it
    is known to be a raster image under the image directory `base` (see `util/images.py`); a relative path resolves
    against the input file's directory."""
    relative_to = Path(where).parent if where and Path(where).is_file() else None
    resolved = []
    for image in images:
        if not isinstance(image, str) or not image:
            raise BadRecord(f"an image reference must be a path or URL string, not {image!r}")
        try:
            resolved.append(check_reference(image, relative_to=relative_to, base=base))
        except ImageRefused as refused:
            raise BadRecord(str(refused)) from None
    return resolved
