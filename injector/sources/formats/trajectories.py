"""Our own trajectory records (`id`, `question`, `steps`, `answer`, `images`, `subject`, `meta`), or foreign ones
mapped onto them field by field with `--field TARGET=SOURCE`."""
from __future__ import annotations

from typing import Any, Mapping

from pydantic import ValidationError

from injector.model.trajectory import Trajectory
from injector.sources.reading import FORMAT_HINT, MISSING, BadRecord, lookup, resolve_images
from injector.sources.registry import ReadOptions, RecordFormat
from injector.util.errors import UserError

TRAJECTORY_FIELDS = tuple(Trajectory.model_fields)


def detect(record: dict) -> bool:
    return "steps" in record and "question" in record


def check_fields(fields: Mapping[str, str]) -> None:
    """Refuse a `--field` mapping onto a field a trajectory does not have, or from no field at all."""
    for target, source in fields.items():
        if target not in TRAJECTORY_FIELDS:
            raise UserError(f"--field {target}={source}: unknown target {target!r}; targets are "
                            f"{', '.join(TRAJECTORY_FIELDS)}")
        if not source:
            raise UserError(f"--field {target}=: name the source field, e.g. --field {target}=response.{target}")


def read(record: dict, origin: str, where: str, options: ReadOptions) -> Trajectory:
    """One of our own records, or a foreign one mapped through `options.fields` (its other keys are ignored)."""
    fields = options.fields or {}
    if fields:
        data = {key: value for key, value in record.items() if key in TRAJECTORY_FIELDS and key not in fields}
        for target, source in fields.items():
            value = lookup(record, source)
            if value is MISSING:
                raise BadRecord(f"missing field '{source}' (mapped to {target} by --field {target}={source})")
            data[target] = value
    else:
        data = dict(record)
    for key in ("id", "answer", "images", "meta", "subject"):  # Hugging Face rows fill absent columns with None
        if data.get(key, MISSING) is None:
            del data[key]
    data.setdefault("id", origin)
    for key in ("id", "answer"):  # numeric ids and answers are common in foreign data
        if isinstance(data.get(key), (int, float)) and not isinstance(data.get(key), bool):
            data[key] = str(data[key])
    try:
        trajectory = Trajectory.model_validate(data)
    except ValidationError as exc:
        raise BadRecord(_explain(exc, fields)) from None
    trajectory.meta.setdefault("idx", trajectory.id)
    trajectory.images = resolve_images(trajectory.images, where, options.image_base)
    return trajectory


def _explain(error: ValidationError, fields: Mapping[str, str]) -> str:
    """A pydantic error as what is wrong and how to fix it."""
    problems = []
    for item in error.errors():
        name = ".".join(str(part) for part in item["loc"])
        top = str(item["loc"][0]) if item["loc"] else ""
        mapped = f" (from '{fields[top]}')" if top in fields else ""
        if item["type"] == "extra_forbidden":
            problems.append(f"unknown field '{name}'; a trajectory has {', '.join(TRAJECTORY_FIELDS)} (map other "
                            "names with --field TARGET=SOURCE, or use --input-format to choose another format)")
        elif item["type"] == "missing":
            problems.append(f"missing field '{name}' (trajectory records need question and steps; map other "
                            f"names with --field TARGET=SOURCE, or {FORMAT_HINT})")
        else:
            problems.append(f"field '{name}'{mapped}: {item['msg'].removeprefix('Value error, ')}")
    return "; ".join(problems)


FORMAT = RecordFormat(
    name="trajectories", detect=detect, read=read, options=("fields",), catch_all=True,
    description="The toolkit's own trajectory records, or any JSON records mapped onto them field by field.",
)
