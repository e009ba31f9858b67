"""Reading a taxonomy file: its YAML, the files it names (kept inside its directory or the bundled prompts),
`extends:` resolved, and problems described one per line."""
from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from injector.taxonomy.extends import merge
from injector.util.errors import UserError
from injector.util.resources import bundled_prompts_dir, bundled_taxonomies


def resolve_taxonomy(source: str | Path | None) -> Path:
    """A bundled taxonomy's file by name, or the given path (which must exist)."""
    bundled = bundled_taxonomies()
    if source is None:
        return bundled["prmbench"]
    if str(source) in bundled:
        return bundled[str(source)]
    path = Path(source)
    if not path.is_file():
        raise UserError(f"{source}: no such taxonomy file, and not a bundled taxonomy "
                        f"(bundled: {', '.join(sorted(bundled))})")
    return path.resolve()


def allowed_dirs(taxonomy_path: Path) -> tuple[Path, ...]:
    """Where a taxonomy's templates and hooks may really lie: its own directory and the bundled prompts."""
    return (taxonomy_path.resolve().parent, bundled_prompts_dir().resolve())


def inside(path: Path, directories: tuple[Path, ...]) -> bool:
    return any(path.is_relative_to(directory) for directory in directories)


def _contained_file(path: Path, file: str, where: str, problems: list[str],
                    value: str | None = None) -> Path | None:
    """The real path of `file` (relative to the taxonomy file `path`) if it lies, symlinks resolved, inside the
    taxonomy's directory or the bundled prompts; otherwise None, with the reason (quoting `value`, the YAML's own
    text, default `file`) appended to `problems`."""
    value = file if value is None else value
    if Path(file).is_absolute() or ".." in Path(file).parts:
        problems.append(f"{where}: {value!r} must be a path inside the taxonomy's directory, relative to the "
                        "taxonomy file")
        return None
    try:
        real = (path.parent / file).resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
        problems.append(f"{where}: {value!r} cannot be resolved ({exc})")
        return None
    if not inside(real, allowed_dirs(path)):
        problems.append(f"{where}: {value!r} resolves (through a symlink) to {real}, outside the taxonomy's "
                        "directory and the bundled prompts; copy the file into the taxonomy's directory instead "
                        "of linking it")
        return None
    return real


def read_taxonomy(path: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
    """The YAML of `path` as a dict, with paths made absolute and `extends:` merged in."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise UserError(f"{path}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("categories", []), list):
        raise UserError(f"{path}: a taxonomy is a mapping with `name` and a list of `categories`")
    problems: list[str] = []
    for position, category in enumerate(data.get("categories") or []):
        if not isinstance(category, dict):
            raise UserError(f"{path}: categories[{position}] is not a mapping of keys")
        for key in ("template", "hook"):
            value = category.get(key)
            if isinstance(value, str):
                file = value.split(":", 1)[0] if key == "hook" else value
                if _contained_file(path, file, f"categories.{category.get('id', position)}.{key}", problems, value):
                    category[key] = str((path.parent / value).resolve())
        if isinstance(category.get("examples"), str):
            category["examples"] = _read_examples(path, category, problems)
    if problems:
        raise UserError(problems_text(path, problems))
    parent_name = data.pop("extends", None)
    if parent_name is None:
        return data
    bundled = bundled_taxonomies()
    if parent_name not in bundled:
        raise UserError(problems_text(path, [f"extends: {parent_name!r} is not a bundled taxonomy; choose one of "
                                         f"{', '.join(sorted(bundled))}"]))
    if bundled[parent_name] in seen:
        raise UserError(problems_text(path, [f"extends: {parent_name!r} extends itself"]))
    return merge(read_taxonomy(bundled[parent_name], (*seen, path)), data)


def _read_examples(path: Path, category: dict[str, Any], problems: list[str]) -> Any:
    """The list in the examples file a category names (YAML or JSON, beside the taxonomy); problems are appended."""
    value = category["examples"]
    file = _contained_file(path, value, f"categories.{category.get('id', '?')}.examples", problems)
    if file is None:
        return []
    where = f"categories.{category.get('id', '?')}.examples"
    try:
        examples = yaml.safe_load(file.read_text(encoding="utf-8"))  # JSON is YAML
    except (OSError, UnicodeDecodeError) as exc:
        problems.append(f"{where}: cannot read {value}: {exc.strerror if isinstance(exc, OSError) else exc}")
        return []
    except yaml.YAMLError as exc:
        problems.append(f"{where}: {value} is not valid YAML or JSON: {exc}")
        return []
    if not isinstance(examples, list):
        problems.append(f"{where}: {value} must hold a list of examples ({{question, steps, answer}})")
        return []
    return examples


def problems_text(path: Path, problems: list[str] | str) -> str:
    problems = [problems] if isinstance(problems, str) else problems
    if len(problems) == 1:
        return f"{path}: {problems[0]}"
    return f"{path}: {len(problems)} problems:\n" + "\n".join(f"  - {problem}" for problem in problems)


def hash_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def describe_validation_error(exc: ValidationError, data: dict) -> list[str]:
    """One line per problem, naming the key path (category ids instead of list positions) and the fix."""
    lines = []
    for error in exc.errors():
        location = list(error["loc"])
        if len(location) >= 2 and location[0] == "categories" and isinstance(location[1], int):
            try:
                location[1] = data["categories"][location[1]].get("id", location[1])
            except (IndexError, AttributeError, KeyError):
                pass
        where = ".".join(str(part) for part in location) or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            lines.append(f"unknown key {where!r}: remove it or fix its spelling (see README, Taxonomy)")
        elif error["type"] == "missing":
            lines.append(f"missing key {where!r}")
        else:
            lines.append(f"{where}: {message} (got {error.get('input')!r})" if error["type"] != "value_error"
                         else f"{where}: {message}")
    return lines

