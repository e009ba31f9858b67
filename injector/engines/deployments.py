"""`--deployments FILE`: the servers one run spreads its requests over, read from YAML with FILE:LINE errors.

A file names, per deployment, the litellm model, its `api_base`, its `rpm`/`tpm` and the *name* of the environment
variable holding its key (`api_key_env`), never the key itself: a run directory's manifest records the file's
deployments, and the file travels with it. A key found in the file is refused (exit 2), not used.

    model: qwen                 # optional: the name the run (and its cache key) uses; default --model
    cooldown_seconds: 5         # optional: how long the Router rests a failing server
    allowed_fails: 3            # optional: failures in a minute before it does
    deployments:
      - model: hosted_vllm/Qwen/Qwen2.5-7B-Instruct
        api_base: http://10.0.0.1:8000/v1
        rpm: 600
      - model: openai/qwen
        api_base: https://gpu-b.example.org/v1
        rpm: 300
        tpm: 400000
        api_key_env: GPU_B_KEY
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from injector.util.errors import InputError, UserError
from injector.util.redaction import public_host

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
"""What an OpenAI-style key looks like (sk-..., sk-proj-..., sk-ant-...): refused wherever it appears."""
DEPLOYMENT_KEYS: dict[str, type | tuple[type, ...]] = {
    "model": str, "api_base": str, "rpm": (int, float), "tpm": (int, float), "api_key_env": str}
TOP_KEYS: dict[str, type | tuple[type, ...]] = {
    "model": str, "deployments": list, "cooldown_seconds": (int, float), "allowed_fails": int}
KEY_NAMES = ("api_key", "key", "token", "secret", "password")
DEFAULT_COOLDOWN_SECONDS = 5.0
"""litellm's own default (DEFAULT_COOLDOWN_TIME_SECONDS)."""
DEFAULT_ALLOWED_FAILS = 3


@dataclass(frozen=True)
class Deployment:
    """One server of a run: where it is, how much it may take, and where its key is (an environment variable)."""

    model: str
    api_base: str | None = None
    rpm: float | None = None
    tpm: float | None = None
    api_key_env: str | None = None
    origin: str = "--api-base"
    """Where it was declared (FILE:LINE, or the option), for error messages."""

    def public(self) -> dict[str, Any]:
        """What the manifest records: no key, no userinfo, no query (the variable's name only)."""
        return {"model": self.model, "api_base_host": public_host(self.api_base), "rpm": self.rpm, "tpm": self.tpm,
                "api_key_env": self.api_key_env}


@dataclass(frozen=True)
class DeploymentSet:
    """The deployments of a run and the Router settings that go with them."""

    deployments: list[Deployment]
    model: str | None = None
    """The name the run uses for them (the Router's model group; part of the cache key)."""
    cooldown_seconds: float = DEFAULT_COOLDOWN_SECONDS
    allowed_fails: int = DEFAULT_ALLOWED_FAILS
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def models(self) -> list[str]:
        """The set of the deployments' models, sorted: what the run configuration and the cache key use (never
        their addresses, so a rerun through other servers of the same model resumes and hits the cache)."""
        return sorted({d.model for d in self.deployments})


def from_api_bases(model: str, api_bases: list[str]) -> DeploymentSet:
    """`--api-base` given several times: one deployment of `model` per server, no limits of their own."""
    return DeploymentSet([Deployment(model=model, api_base=base, origin=f"--api-base {public_host(base)}")
                          for base in api_bases], model=model)


def load_deployments(path: str | Path) -> DeploymentSet:
    """Read a deployments file; every problem is an `InputError` naming FILE:LINE and the fix (exit 2)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read the deployments file {path}: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise InputError(path, mark.line + 1 if mark else None,
                         f"not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    if isinstance(root, yaml.SequenceNode):  # a bare list of deployments
        top: dict[str, tuple[Any, int]] = {"deployments": (root, root.start_mark.line + 1)}
    elif isinstance(root, yaml.MappingNode):
        top = _mapping(path, root, TOP_KEYS, "the file")
    else:
        raise InputError(path, 1, "expected a mapping with `deployments:` (a list), or a list of deployments")
    if "deployments" not in top:
        raise InputError(path, 1, "no `deployments:` list; add one entry per server (model, api_base, rpm)")
    node, line = top["deployments"]
    if not isinstance(node, yaml.SequenceNode) or not node.value:
        raise InputError(path, line, "`deployments` must be a non-empty list, one entry per server")
    deployments = [_deployment(path, entry) for entry in node.value]
    settings = {}
    for name in ("model", "cooldown_seconds", "allowed_fails"):
        if name in top:
            value = settings[name] = _value(path, *top[name])
            if isinstance(value, bool) or not isinstance(value, TOP_KEYS[name]):
                kind = {"model": "a string", "allowed_fails": "a whole number"}.get(name, "a number")
                raise InputError(path, top[name][1], f"`{name}` must be {kind}, not {value!r}")
            if isinstance(value, str) and KEY_LIKE.search(value):
                raise InputError(path, top[name][1], f"`{name}` holds what looks like an API key; keys never go "
                                 "in this file: export it in an environment variable and name it with "
                                 "`api_key_env: NAME`")
    for name in ("cooldown_seconds", "allowed_fails"):
        if name in settings and not 0 <= settings[name] < math.inf:  # also false for .nan
            raise InputError(path, top[name][1], f"{name} must be a finite number, 0 or more")
    return DeploymentSet(deployments, model=settings.get("model"),
                         cooldown_seconds=float(settings.get("cooldown_seconds", DEFAULT_COOLDOWN_SECONDS)),
                         allowed_fails=int(settings.get("allowed_fails", DEFAULT_ALLOWED_FAILS)))


def _mapping(path: Path, node: Any, allowed: dict[str, Any], what: str) -> dict[str, tuple[Any, int]]:
    """A YAML mapping node as {key: (value node, line)}, refusing keys (a key above all) and unknown names."""
    if not isinstance(node, yaml.MappingNode):
        raise InputError(path, node.start_mark.line + 1, f"{what} must be a mapping (key: value)")
    items: dict[str, tuple[Any, int]] = {}
    for key_node, value_node in node.value:
        name, line = str(key_node.value), key_node.start_mark.line + 1
        if name.lower() in KEY_NAMES or name.lower().endswith(("_key", "_token", "_secret")) and name != "api_key_env":
            raise InputError(path, line, f"`{name}` would put a secret in the file, which travels with the run "
                             "directory; export the key in an environment variable and name it with "
                             "`api_key_env: VARIABLE_NAME`")
        if name not in allowed:
            raise InputError(path, line, f"unknown key `{name}` in {what}; allowed: {', '.join(allowed)}")
        if name in items:
            raise InputError(path, line, f"`{name}` given twice in {what}")
        items[name] = (value_node, line)
    return items


def _value(path: Path, node: Any, line: int) -> Any:
    """The scalar a node holds, typed as YAML would (through a one-node load, never a custom tag)."""
    if not isinstance(node, yaml.ScalarNode):
        raise InputError(path, line, "expected a single value here, not a list or a mapping")
    return yaml.safe_load(yaml.serialize(node))


def _deployment(path: Path, node: Any) -> Deployment:
    line = node.start_mark.line + 1
    fields = _mapping(path, node, DEPLOYMENT_KEYS, "a deployment")
    values: dict[str, Any] = {}
    for name, (value_node, value_line) in fields.items():
        value = _value(path, value_node, value_line)
        expected = DEPLOYMENT_KEYS[name]
        if isinstance(value, bool) or not isinstance(value, expected):
            kind = "a number" if name in ("rpm", "tpm") else "a string"
            raise InputError(path, value_line, f"`{name}` must be {kind}, not {value!r}")
        if isinstance(value, str) and KEY_LIKE.search(value):
            raise InputError(path, value_line, f"`{name}` holds what looks like an API key; keys never go in this "
                             "file: export it in an environment variable and name it with `api_key_env: NAME`")
        values[name] = value
        values[f"{name}_line"] = value_line
    if "model" not in values:
        raise InputError(path, line, "a deployment needs `model` (a litellm model string, e.g. openai/qwen)")
    for name in ("rpm", "tpm"):
        if name in values and not 0 < values[name] < math.inf:  # .nan and .inf too
            raise InputError(path, values[f"{name}_line"], f"`{name}` must be a finite number more than 0 (or "
                             "left out: no limit)")
    api_base = values.get("api_base")
    if api_base is not None:
        parts = urlsplit(api_base)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InputError(path, values["api_base_line"], f"`api_base` {public_host(api_base)!r} is not an "
                             "http(s) URL, e.g. http://127.0.0.1:8000/v1")
        if parts.username or parts.password or parts.query:
            raise InputError(path, values["api_base_line"], "`api_base` carries credentials (user:password@ or a "
                             "query); keys never go in this file: name an environment variable with `api_key_env`")
    env = values.get("api_key_env")
    if env is not None and not ENV_NAME.fullmatch(env):
        raise InputError(path, values["api_key_env_line"], "`api_key_env` is the NAME of an environment variable "
                         "(e.g. GPU_B_KEY), not the key itself")
    return Deployment(model=values["model"], api_base=api_base, rpm=values.get("rpm"), tpm=values.get("tpm"),
                      api_key_env=env, origin=f"{path}:{line}")
