"""`Category` and `Taxonomy`: the error categories, their templates and the rules their validator enforces."""
from __future__ import annotations

import difflib
import hashlib
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from .errors import UserError
from .resources import bundled_taxonomy_path

Domain = Literal["simplicity", "soundness", "sensitivity"]


class Rules(BaseModel):
    """What the validator enforces for a category (defaults fit an injected error)."""

    model_config = ConfigDict(extra="forbid")

    allow_question_edit: bool = False
    """The injection may change the question (`question_edit_not_allowed` otherwise)."""
    allow_error_on_unchanged_step: bool = False
    """An error step may be a step the injection left unchanged (`error_on_unchanged_step` otherwise)."""
    allow_deletions: bool = True
    """The injection may delete original steps (listed in warnings; `deletion_not_allowed` otherwise)."""
    multi_solution: bool = False
    """The answer is a different correct solution: no error steps, same final answer, really different."""


class Category(BaseModel):
    """One error category of a taxonomy."""

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    domain: Domain
    prmbench_id: str | None = None
    """PRMBench's `classification` spelling (e.g. `redundency`); None for categories PRMBench does not have."""
    template: str
    """Path of the category's Jinja template, relative to the taxonomy file."""
    definition: str
    error_steps: str
    """Which steps are the error steps, in words (shown to the model)."""
    not_this: str
    """What looks similar but is not this category (shown to the model)."""
    rules: Rules = Field(default_factory=Rules)
    label_leak_phrases: list[str] = Field(default_factory=list)
    """Extra phrases, beyond the taxonomy's, that make a changed step announce its own error."""

    @property
    def classification(self) -> str:
        """The `classification` value written into PRMBench-style records."""
        return self.prmbench_id or self.id


class Taxonomy(BaseModel):
    """A named set of categories loaded from a YAML file; templates resolve relative to that file."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    label_leak_phrases: list[str] = Field(default_factory=list)
    categories: list[Category]
    path: Path | None = Field(default=None, exclude=True)
    _hashes: dict[str, str] = PrivateAttr(default_factory=dict)  # file hashes, read once per load

    @model_validator(mode="after")
    def _ids_unique(self) -> "Taxonomy":
        seen: set[str] = set()
        for category in self.categories:
            if category.id in seen:
                raise ValueError(f"duplicate category id {category.id!r}")
            seen.add(category.id)
        return self

    @classmethod
    def load(cls, path: str | Path | None = None) -> "Taxonomy":
        """Load a taxonomy YAML (default: the bundled PRMBench taxonomy); errors name the file and the key."""
        path = Path(path) if path is not None else bundled_taxonomy_path()
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UserError(f"{path}: no such taxonomy file") from None
        except yaml.YAMLError as exc:
            raise UserError(f"{path}: not valid YAML: {exc}") from None
        if not isinstance(data, dict):
            raise UserError(f"{path}: a taxonomy is a mapping with `name` and `categories`")
        try:
            taxonomy = cls.model_validate(data)
        except ValidationError as exc:
            raise UserError(f"{path}: {_describe_validation_error(exc, data)}") from None
        taxonomy.path = path.resolve()
        for category in taxonomy.categories:
            if not taxonomy.template_path(category).is_file():
                raise UserError(
                    f"{path}: category {category.id!r}: template {category.template!r} not found "
                    f"(looked for {taxonomy.template_path(category)}); templates are relative to the taxonomy file"
                )
        return taxonomy

    @property
    def base_dir(self) -> Path:
        return self.path.parent if self.path else bundled_taxonomy_path().parent

    def template_path(self, category: Category) -> Path:
        return self.base_dir / category.template

    def category(self, category_id: str) -> Category:
        """The category with this id; an unknown id is a UserError with a "did you mean"."""
        for category in self.categories:
            if category.id == category_id:
                return category
        ids = [c.id for c in self.categories]
        close = difflib.get_close_matches(category_id, ids, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise UserError(f"unknown category {category_id!r}.{hint} Available: {', '.join(ids)}")

    def select(self, category_ids: list[str] | tuple[str, ...]) -> list[Category]:
        """Categories by id, in the order given; `all` means every category of the taxonomy."""
        if not category_ids or "all" in category_ids:
            return list(self.categories)
        selected: list[Category] = []
        for category_id in category_ids:
            category = self.category(category_id)
            if category not in selected:
                selected.append(category)
        return selected

    def leak_phrases(self, category: Category) -> list[str]:
        return [*self.label_leak_phrases, *category.label_leak_phrases]

    def file_hash(self) -> str:
        """SHA-256 (16 hex digits) of the taxonomy file as written, for provenance and run configuration."""
        if "" not in self._hashes:
            self._hashes[""] = _hash_bytes(self.path.read_bytes() if self.path else self.model_dump_json().encode())
        return self._hashes[""]

    def template_hash(self, category: Category) -> str:
        """Hash of the category's template and the shared templates (`_*.j2`) beside it."""
        if category.id not in self._hashes:
            template = self.template_path(category)
            shared = sorted(p for p in template.parent.glob("_*.j2") if p != template)
            self._hashes[category.id] = _hash_bytes(b"".join(p.read_bytes() for p in [template, *shared]))
        return self._hashes[category.id]


def _hash_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _describe_validation_error(exc: ValidationError, data: dict) -> str:
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
        if error["type"] == "extra_forbidden":
            lines.append(f"unknown key {where!r}: remove it or fix its spelling")
        elif error["type"] == "missing":
            lines.append(f"missing key {where!r}")
        else:
            lines.append(f"{where}: {error['msg']}")
    return "; ".join(lines)
