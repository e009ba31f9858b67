"""Rendering a category's prompt: a sandboxed Jinja environment, a static system part, the trajectory last.

Each category template extends `prompts/_base.j2` and is rendered twice: with `part="system"` it sees only the
category (so the system message is byte-identical across requests and providers can cache the prefix), with
`part="user"` it also sees the trajectory. Text from the data is passed as values, never as template source,
so a question containing `{{ }}` comes through verbatim.
"""
from __future__ import annotations

import base64
import functools
import json
import os
from pathlib import Path
from typing import Any

from jinja2 import FileSystemLoader, StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from injector.answer.contract import answer_mode
from injector.util.errors import UserError
from injector.inject.examples import examples_for, rendered_examples
from injector.util.images import ImageRefused, checked_url, read_image
from injector.util.resources import bundled_prompts_dir
from injector.answer.step_labels import without_labels
from injector.taxonomy import Category, Taxonomy
from injector.model.trajectory import Trajectory


def _to_json(value: Any) -> str:
    # Readable JSON for the model: real Unicode and backslashes as JSON needs them, unlike Jinja's HTML-safe tojson.
    return json.dumps(value, ensure_ascii=False, indent=2)


class ContainedLoader(FileSystemLoader):
    """A FileSystemLoader that refuses a template (or `{% include %}` / `{% extends %}`) whose real path, symlinks
    followed, lies outside the allowed directories: a link must not pull an outside file into a prompt."""

    def __init__(self, searchpath: list[str], allowed: tuple[Path, ...]):
        super().__init__(searchpath)
        self.allowed = tuple(Path(os.path.realpath(d)) for d in allowed)

    def get_source(self, environment: Any, template: str) -> Any:
        source, filename, uptodate = super().get_source(environment, template)
        real = Path(os.path.realpath(filename))
        if not any(real.is_relative_to(d) for d in self.allowed):
            raise UserError(f"{filename}: template {template!r} resolves (through a symlink) to {real}, outside "
                            "the taxonomy's directory and the bundled prompts; refusing to read it. Copy the file "
                            "into the taxonomy's directory instead of linking it")
        return source, filename, uptodate


@functools.lru_cache(maxsize=16)
def _environment(template_dir: Path | None, taxonomy_dir: Path | None = None) -> SandboxedEnvironment:
    # `{% extends "_base.j2" %}` resolves beside the template first, then in the bundled prompts, so a custom
    # taxonomy can reuse the bundled base template.
    search = [str(template_dir)] if template_dir else []
    allowed = tuple(d for d in (template_dir, taxonomy_dir, bundled_prompts_dir()) if d is not None)
    env = SandboxedEnvironment(
        loader=ContainedLoader([*search, str(bundled_prompts_dir())], allowed),
        undefined=StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.filters["to_json"] = _to_json
    return env


@functools.lru_cache(maxsize=256)
def _system_part(template: Any, static_json: str) -> str:
    # The system part sees only the category and the mode, so it is rendered once per (template, context) and
    # reused for every trajectory: the same text, byte for byte, without re-rendering it for each unit.
    return template.render(part="system", **json.loads(static_json)).strip()


@functools.lru_cache(maxsize=64)
def _compiled_text(text: str) -> Any:
    return _environment(None).from_string(text)


def category_context(taxonomy: Taxonomy, category: Category) -> dict[str, Any]:
    """What the static (system) part sees: the category, with the taxonomy's leak phrases merged in."""
    return {"category": {**category.model_dump(exclude={"template_text", "examples"}),
                         "label_leak_phrases": taxonomy.leak_phrases(category)}}


def trajectory_context(trajectory: Trajectory) -> dict[str, Any]:
    return {
        "question": trajectory.question,
        "steps": list(trajectory.steps),
        "answer": trajectory.answer,
        "images": list(trajectory.images),
        "subject": trajectory.subject,
    }


def image_part(reference: str) -> dict[str, Any]:
    """An OpenAI-style image part: http(s) and raster data: URLs as given, local files inlined as data URLs. A
    local file is read again here without following symlinks, its type taken from its bytes (the loader has already
    checked that it lies under the image directory)."""
    try:
        url = checked_url(reference)
        if url is None:
            data, mime = read_image(reference)
            url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    except ImageRefused as refused:
        raise UserError(str(refused)) from None
    return {"type": "image_url", "image_url": {"url": url}}


def _static_context(taxonomy: Taxonomy, category: Category, mode: str,
                    question: str | None = None) -> tuple[dict[str, Any], str]:
    """What the system part sees, and its JSON (the system part's cache key). With `question`, the worked examples
    leave out that problem's own."""
    static = {**category_context(taxonomy, category), "output_mode": mode,
              "worked_examples": rendered_examples(category, mode, question)}
    return static, json.dumps(static, sort_keys=True, default=str)


def render_messages(
    taxonomy: Taxonomy, category: Category, trajectory: Trajectory, output_mode: str = "edits",
    attach_images: bool = True,
) -> list[dict[str, Any]]:
    """The chat messages that ask for one injection of `category` into `trajectory`.

    A trajectory's images go into the user message as image parts after its text (`attach_images=False` leaves
    them out, e.g. to count text tokens).

    `output_mode` is the answer the prompt asks for: "edits" (only the model's edits to the original steps) or
    "full" (the whole modified solution). `multi_solution` categories always ask for the full solution.
    """
    mode = answer_mode(category, output_mode)
    trajectory, _ = without_labels(trajectory)  # labelled steps are shown bare (see step_labels.py)
    template_path = taxonomy.template_path(category)
    template_name = template_path.name if template_path else f"<template_text of {category.id}>"
    try:
        if template_path:
            taxonomy_dir = taxonomy.path.resolve().parent if taxonomy.path else None
            template = _environment(template_path.parent, taxonomy_dir).get_template(template_name)
        else:
            template = _compiled_text(category.template_text)
        # The system part stays byte-identical across units; only a unit whose problem is one of the worked
        # examples' gets another (the examples without its own problem).
        own = len(examples_for(category, trajectory.question)) < len(category.examples)
        question = trajectory.question if own else None
        static, static_json = taxonomy.memo(("static prompt", id(category), category.id, mode, question),
                                            lambda: _static_context(taxonomy, category, mode, question))
        system = _system_part(template, static_json)
        dynamic = {**trajectory_context(trajectory), "images_attached": attach_images and bool(trajectory.images),
                   **category.extra_context(trajectory)}
        user = template.render(part="user", **static, **dynamic).strip()
    except TemplateError as exc:
        where = getattr(exc, "filename", None) or template_name
        line = getattr(exc, "lineno", None)
        location = f"{where}:{line}" if line else str(where)
        raise UserError(f"{location}: template error in category {category.id!r}: {exc}") from None
    content: Any = user
    if attach_images and trajectory.images:
        content = [{"type": "text", "text": user}, *(image_part(image) for image in trajectory.images)]
    return [{"role": "system", "content": system}, {"role": "user", "content": content}]


def render_bundled(template_name: str, **context: Any) -> list[dict[str, Any]]:
    """The messages of a bundled prompt that is no category's (`verify/error.j2`, ...): rendered with
    `part="system"` (static, so providers can cache it) and `part="user"` (sees `context`), like a category's."""
    try:
        template = _environment(None).get_template(template_name)
        system = _system_part(template, "{}")
        user = template.render(part="user", **context).strip()
    except TemplateError as exc:
        raise UserError(f"{template_name}: template error: {exc}") from None
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]
