"""The taxonomy's models: `Rules`, `WorkedExample`, `Category` and `Taxonomy` (read from YAML by `loading`)."""
from __future__ import annotations

import contextlib
import difflib
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from injector.taxonomy.hooks import Hook, load_hook
from injector.taxonomy.loading import (allowed_dirs, describe_validation_error, hash_bytes, inside, problems_text,
                                       read_taxonomy, resolve_taxonomy)
from injector.util.errors import UserError
from injector.util.resources import bundled_prompts_dir


class Rules(BaseModel):
    """What the validator enforces for a category (defaults fit an injected error)."""

    model_config = ConfigDict(extra="forbid")

    allow_question_edit: bool = False
    """The injection may change the question (`question_edit_not_allowed` otherwise)."""
    allow_error_on_unchanged_step: bool | Literal["with_question_edit"] = False
    """An error step may be a step the injection left unchanged (`error_on_unchanged_step` otherwise);
    `with_question_edit`: only when the question was changed (a trap set in the question makes an unchanged step
    wrong)."""
    allow_deletions: bool = True
    """The injection may delete original steps (listed in warnings; `deletion_not_allowed` otherwise)."""
    multi_solution: bool = False
    """The answer is a different correct solution: no error steps, same final answer, really different."""
    final_answer: Literal["any", "keep", "change"] = "any"
    """Whether the final answer must stay (`answer_changed` otherwise) or must change (`answer_unchanged`)."""
    min_changes: int = Field(default=0, ge=0)
    """Fewest changed or inserted steps (`too_few_changes`)."""
    max_changes: int | None = Field(default=None, ge=1)
    """Most changed or inserted steps (`too_many_changes`); none when null."""
    require_explanations: bool = False
    """Every error step needs an explanation (`missing_explanation`)."""
    requires_images: bool = False
    """Only trajectories with an image can carry this error; the others are `not_applicable`."""

    def allows_error_on_unchanged_step(self, question_edited: bool) -> bool:
        """Whether an unchanged step may be an error step, given whether the question was changed."""
        if self.allow_error_on_unchanged_step == "with_question_edit":
            return question_edited
        return self.allow_error_on_unchanged_step is True

    @model_validator(mode="after")
    def _range(self) -> "Rules":
        if self.max_changes is not None and self.min_changes > self.max_changes:
            raise ValueError(f"min_changes ({self.min_changes}) is above max_changes ({self.max_changes})")
        return self


class ExampleAnswer(BaseModel):
    """A worked example's answer, in full form; the changed steps and the edit form are derived from it."""

    model_config = ConfigDict(extra="forbid")

    modified_question: str | None = None
    """The question after the change; leave it out when the question stays."""
    modified_process: list[str] = Field(min_length=1)
    error_steps: list[int] = Field(default_factory=list)
    """1-based positions in modified_process (empty for a multi-solution example)."""
    reason: str
    explanations: dict[int, str] = Field(default_factory=dict)
    """Error step (1-based, in modified_process) -> what is wrong with it."""


class WorkedExample(BaseModel):
    """One worked example shown in a category's prompt: an original solution and a good answer."""

    model_config = ConfigDict(extra="forbid")

    question: str
    steps: list[str] = Field(min_length=1)
    """The original, correct steps; the last one ends with `# Answer` and the final answer."""
    answer: ExampleAnswer
    subject: str = ""
    """The subject shown before the question (math, physics, ...), as a trajectory's `subject` is."""
    figure: str = ""
    """A description in words of the figure the question refers to (examples carry no image)."""
    source: str = ""
    """Where the example was adapted from, with its licence (not shown to the model)."""
    answer_kept_because: str = ""
    """Why the final answer stays the same although errors of this category normally change it."""


class Category(BaseModel):
    """One error category of a taxonomy."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    id: str = Field(pattern=r"^[a-z][a-z0-9_]*$")
    """Lower-case letters, digits and underscores: it names splits and files."""
    name: str
    definition: str
    domain: str = ""
    """PRMBench's domain (simplicity, soundness, sensitivity) or your own grouping."""
    prmbench_id: str | None = None
    """PRMBench's `classification` spelling (e.g. `redundency`); None for categories PRMBench does not have."""
    template: str | None = None
    """Path of the category's Jinja template, relative to the taxonomy file (absolute once loaded)."""
    template_text: str | None = None
    """The template itself, for categories built in Python (instead of `template`)."""
    error_steps: str = "the erroneous steps"
    """Which steps are the error steps, in words (shown to the model)."""
    not_this: str = ""
    """What looks similar but is not this category (shown to the model)."""
    rules: Rules = Field(default_factory=Rules)
    label_leak_phrases: list[str] = Field(default_factory=list)
    """Extra phrases, beyond the taxonomy's, that make a changed step announce its own error."""
    examples: list[WorkedExample] = Field(default_factory=list)
    """Worked examples shown in the prompt, in both output forms (in YAML: a list, or a YAML/JSON file beside the
    taxonomy holding one)."""
    variables: dict[str, Any] = Field(default_factory=dict)
    """Extra template variables (`category.variables`)."""
    hook: str | None = None
    """`file.py:Name`, relative to the taxonomy file: extra template context and an extra check (code!)."""
    check: Callable[..., Any] | None = Field(default=None, exclude=True)
    """Python API: `check(trajectory, verdict)` returning (code, message) pairs, fed back like any rule."""
    context: Callable[..., Any] | None = Field(default=None, exclude=True)
    """Python API: `context(trajectory)` returning extra variables for the user message."""
    _hook: Hook | None = PrivateAttr(default=None)
    _hooks_enabled: bool = PrivateAttr(default=True)
    """False for a taxonomy read from a run directory: its hook and Python checks never run."""
    _hook_dirs: tuple[Path, ...] | None = PrivateAttr(default=None)
    """Where a hook file loaded from YAML must really lie (None for categories built in Python)."""

    @model_validator(mode="after")
    def _one_template(self) -> "Category":
        if (self.template is None) == (self.template_text is None):
            raise ValueError("give exactly one of `template` (a file) and `template_text`")
        return self

    @property
    def classification(self) -> str:
        """The `classification` value written into PRMBench-style records."""
        return self.prmbench_id or self.id

    def loaded_hook(self) -> Hook | None:
        """The hook object, imported on first use (a category that is never used never runs its code)."""
        if not self._hooks_enabled:
            return None
        if self.hook is not None and self._hook is None:
            self._hook = load_hook(self.hook, self._hook_dirs)
        return self._hook

    @property
    def hooks_enabled(self) -> bool:
        return self._hooks_enabled

    def extra_context(self, trajectory: Any) -> dict[str, Any]:
        """Variables the hook and the `context` callable add to the user message."""
        extra: dict[str, Any] = {}
        if not self._hooks_enabled:
            return extra
        for source in (getattr(self.loaded_hook(), "context", None), self.context):
            if source is not None:
                extra.update(source(trajectory) or {})
        return extra

    def extra_checks(self, trajectory: Any, verdict: Any) -> list[tuple[str, str]]:
        """(code, message) failures of the hook's and the `check` callable's own rules."""
        failures: list[tuple[str, str]] = []
        if not self._hooks_enabled:
            return failures
        for check in (getattr(self.loaded_hook(), "check", None), self.check):
            if check is not None:
                failures.extend((str(code), str(message)) for code, message in check(trajectory, verdict) or [])
        return failures


class Taxonomy(BaseModel):
    """A named set of categories."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    label_leak_phrases: list[str] = Field(default_factory=list)
    categories: list[Category]
    path: Path | None = Field(default=None, exclude=True)
    _hashes: dict[tuple, str] = PrivateAttr(default_factory=dict)  # template hashes, files read once per template
    _memo: dict[Any, Any] | None = PrivateAttr(default=None)
    """What `fixed` keeps while the taxonomy cannot change (a run); None otherwise."""

    @contextlib.contextmanager
    def fixed(self) -> Iterator["Taxonomy"]:
        """For the duration of a run, which must not change the taxonomy under itself (its hash is in the run's
        configuration): the hash and each category's static prompt parts are computed once (`memo`), not per unit
        (~0.5 ms and ~0.4 ms of CPU a unit otherwise)."""
        outer = self._memo
        self._memo = {} if outer is None else outer
        try:
            yield self
        finally:
            self._memo = outer

    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """`compute()`, kept under `key` while the taxonomy is `fixed`; computed every time otherwise."""
        if self._memo is None:
            return compute()
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    @model_validator(mode="after")
    def _ids_unique(self) -> "Taxonomy":
        ids = [category.id for category in self.categories]
        duplicates = sorted({i for i in ids if ids.count(i) > 1})
        if duplicates:
            raise ValueError(f"duplicate category id {', '.join(map(repr, duplicates))}: ids must be unique")
        return self

    @classmethod
    def load(cls, source: str | Path | None = None, *, rules_only: bool = False) -> "Taxonomy":
        """A taxonomy by bundled name (`prmbench`, the default) or YAML path; every problem is reported at once.

        `rules_only=True` is for a taxonomy that came with someone else's run directory, not one the user named:
        no hook is imported and no Python check runs, and its templates need not exist (nothing is rendered).
        """
        path = resolve_taxonomy(source)
        data = read_taxonomy(path, seen=())
        try:
            taxonomy = cls.model_validate(data)
        except ValidationError as exc:
            raise UserError(problems_text(path, describe_validation_error(exc, data))) from None
        taxonomy.path = path
        missing = [f"categories.{c.id}.template: {c.template} not found; templates are relative to the taxonomy "
                   "file" for c in taxonomy.categories if c.template and not Path(c.template).is_file()]
        if missing and not rules_only:
            raise UserError(problems_text(path, missing))
        allowed = allowed_dirs(path)
        for category in taxonomy.categories:
            category._hook_dirs = allowed
            category._hooks_enabled = not rules_only
        return taxonomy

    @property
    def skipped_hooks(self) -> list[str]:
        """Ids of the categories whose hook is off (loaded with `rules_only=True`)."""
        return [c.id for c in self.categories if c.hook and not c.hooks_enabled]

    def add(self, category: Category) -> Category:
        """Add (or replace, by id) a category built in Python."""
        self.categories = [c for c in self.categories if c.id != category.id] + [category]
        return category

    def template_path(self, category: Category) -> Path | None:
        return Path(category.template) if category.template else None

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
        """SHA-256 (16 hex digits) of the taxonomy's content, for provenance and run configuration.

        Computed each time (~0.5 ms for the bundled one), so a taxonomy changed in Python never reuses the hash of
        its old content; once per run while it is `fixed`.
        """
        return self.memo("file_hash", lambda: hash_bytes(self.model_dump_json().encode()))

    def template_hash(self, category: Category) -> str:
        """Hash of the category's template and the shared templates (`_*.j2`) it may extend: those beside it and
        the bundled ones."""
        key = (category.template, category.template_text)
        if key not in self._hashes:
            template = self.template_path(category)
            own = [] if template is None else [template, *sorted(template.parent.glob("_*.j2"))]
            shared = sorted(bundled_prompts_dir().glob("_*.j2"))
            files = list(dict.fromkeys(p.resolve() for p in [*own, *shared]))
            # Only what a render may read: a `_*.j2` linked out of the taxonomy (or to a device) is never read.
            allowed = (*(allowed_dirs(self.path) if self.path else ()), *(p.parent.resolve() for p in own[:1]),
                       bundled_prompts_dir().resolve())
            files = [p for p in files if inside(p, allowed) and p.is_file()]
            data = b"".join(p.read_bytes() for p in files) + (category.template_text or "").encode()
            self._hashes[key] = hash_bytes(data)
        return self._hashes[key]

