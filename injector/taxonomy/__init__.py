"""`Category` and `Taxonomy`: the error categories, their templates and the rules their validator enforces.

A taxonomy is a YAML file (or built in Python). Template and hook paths are relative to the file that names them
and must resolve (symlinks followed) inside its directory or the bundled `prompts/`; `extends: <bundled name>`
starts from a bundled taxonomy and overrides or adds categories by id.

A run directory records the taxonomy it was made with; `run_taxonomy` loads that one for its rules only (hooks
off), since a run directory may come from someone else: only a taxonomy named on the command line runs code.
"""
from __future__ import annotations

import contextlib
import difflib
import hashlib
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from injector.util.errors import UserError
from injector.taxonomy.hooks import Hook, load_hook
from injector.util.json_bounds import loads_bounded
from injector.util.resources import bundled_prompts_dir, bundled_taxonomies


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
        data = _read_taxonomy(path, seen=())
        try:
            taxonomy = cls.model_validate(data)
        except ValidationError as exc:
            raise UserError(_problems(path, _describe_validation_error(exc, data))) from None
        taxonomy.path = path
        missing = [f"categories.{c.id}.template: {c.template} not found; templates are relative to the taxonomy "
                   "file" for c in taxonomy.categories if c.template and not Path(c.template).is_file()]
        if missing and not rules_only:
            raise UserError(_problems(path, missing))
        allowed = _allowed_dirs(path)
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
        return self.memo("file_hash", lambda: _hash_bytes(self.model_dump_json().encode()))

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
            allowed = (*(_allowed_dirs(self.path) if self.path else ()), *(p.parent.resolve() for p in own[:1]),
                       bundled_prompts_dir().resolve())
            files = [p for p in files if _inside(p, allowed) and p.is_file()]
            data = b"".join(p.read_bytes() for p in files) + (category.template_text or "").encode()
            self._hashes[key] = _hash_bytes(data)
        return self._hashes[key]


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


def _allowed_dirs(taxonomy_path: Path) -> tuple[Path, ...]:
    """Where a taxonomy's templates and hooks may really lie: its own directory and the bundled prompts."""
    return (taxonomy_path.resolve().parent, bundled_prompts_dir().resolve())


def _inside(path: Path, directories: tuple[Path, ...]) -> bool:
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
    if not _inside(real, _allowed_dirs(path)):
        problems.append(f"{where}: {value!r} resolves (through a symlink) to {real}, outside the taxonomy's "
                        "directory and the bundled prompts; copy the file into the taxonomy's directory instead "
                        "of linking it")
        return None
    return real


def _read_taxonomy(path: Path, seen: tuple[Path, ...]) -> dict[str, Any]:
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
        raise UserError(_problems(path, problems))
    parent_name = data.pop("extends", None)
    if parent_name is None:
        return data
    bundled = bundled_taxonomies()
    if parent_name not in bundled:
        raise UserError(_problems(path, [f"extends: {parent_name!r} is not a bundled taxonomy; choose one of "
                                         f"{', '.join(sorted(bundled))}"]))
    if bundled[parent_name] in seen:
        raise UserError(_problems(path, [f"extends: {parent_name!r} extends itself"]))
    return _merge(_read_taxonomy(bundled[parent_name], (*seen, path)), data)


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


def _merge(parent: dict[str, Any], child: dict[str, Any]) -> dict[str, Any]:
    """The child overrides the parent's keys; categories merge by id (rules key by key); leak phrases add up."""
    merged = {**parent, **{k: v for k, v in child.items() if k not in ("categories", "label_leak_phrases")}}
    merged["label_leak_phrases"] = [*parent.get("label_leak_phrases", []), *child.get("label_leak_phrases", [])]
    categories = {c["id"]: c for c in parent.get("categories", [])}
    for category in child.get("categories") or []:
        base = categories.get(category.get("id"), {})
        overrides = {**base, **category}
        if "rules" in base or "rules" in category:
            overrides["rules"] = {**(base.get("rules") or {}), **(category.get("rules") or {})}
        categories[category.get("id")] = overrides
    merged["categories"] = list(categories.values())
    return merged


def _problems(path: Path, problems: list[str] | str) -> str:
    problems = [problems] if isinstance(problems, str) else problems
    if len(problems) == 1:
        return f"{path}: {problems[0]}"
    return f"{path}: {len(problems)} problems:\n" + "\n".join(f"  - {problem}" for problem in problems)


def _hash_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _describe_validation_error(exc: ValidationError, data: dict) -> list[str]:
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


def _real_file(path: Path | None) -> Path | None:
    """The real path of `path` if it is a readable regular file, else None (a manifest may name anything)."""
    try:
        real = path.resolve() if path is not None else None
        return real if real is not None and real.is_file() else None
    except (OSError, RuntimeError, ValueError):  # a name too long, a symlink loop, a NUL byte
        return None


def run_taxonomy(run_dir: str | Path, override: str | Path | None = None) -> tuple[Taxonomy, str]:
    """The taxonomy to check a run directory's candidates with, and a note for the user ("" when none is due).

    `override` (`--taxonomy NAME|PATH`) is what the user named: loaded in full, hooks included. Otherwise the run's
    `manifest.json` decides, and nothing in it runs code: a bundled taxonomy is used as bundled; another one is read
    for its rules only (hooks off), its path resolved against the run directory, never the current directory; a
    run that names none, or one that cannot be read, gets the bundled taxonomy and a note saying so.
    """
    if override is not None:
        return Taxonomy.load(override), ""
    run_dir = Path(run_dir)
    manifest_path = run_dir / "manifest.json"
    try:
        config = loads_bounded(manifest_path.read_text(encoding="utf-8"))["config"]
        name, recorded = config.get("taxonomy"), config.get("taxonomy_path")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return Taxonomy.load(), f"{manifest_path} names no taxonomy: using the bundled one"
    bundled = bundled_taxonomies()
    path = run_dir / recorded if isinstance(recorded, str) and recorded else None  # an absolute one stays as is
    real = _real_file(path)
    if real is not None:
        for bundled_name, bundled_path in bundled.items():
            if real == bundled_path.resolve():
                return Taxonomy.load(bundled_name), ""
    elif isinstance(name, str) and name in bundled:
        # A bundled taxonomy on the machine that made the run (its path does not exist here).
        return Taxonomy.load(name), ""
    if real is None:
        return Taxonomy.load(), (f"the run's taxonomy {recorded!r} (from {manifest_path}) is not here: using the "
                                 "bundled one; pass --taxonomy PATH to check with the run's own")
    try:
        taxonomy = Taxonomy.load(real, rules_only=True)
    except (UserError, OSError, UnicodeDecodeError) as exc:  # someone else's file: any problem is a note
        return Taxonomy.load(), f"the run's taxonomy could not be loaded ({exc}): using the bundled one"
    if not taxonomy.skipped_hooks:
        return taxonomy, ""
    return taxonomy, (f"{real}: hook checks of {', '.join(taxonomy.skipped_hooks)} were skipped: a taxonomy found "
                      f"in a run directory is read for its rules only and never runs code; to run its hooks, review "
                      f"its Python and pass --taxonomy {real}")
