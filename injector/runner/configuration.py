"""Whether a run directory may continue under a configuration: the same one, or any one while it holds no record
(the model is part of a run's configuration only once a unit got an answer with it); a refusal says what differs,
old -> new, one setting per line, and how to go on."""
from __future__ import annotations

import json
from typing import Any

from injector.records.directory import RunDirectory
from injector.records.models import RunManifest
from injector.util.errors import UserError

FREE_BETWEEN_INVOCATIONS = ("--limit", "--concurrency", "--workers", "--max-attempts", "--retry-rejects", "--rpm",
                            "--tpm", "--timeout", "--max-cost", "--cache/--no-cache", "--client", "--executor")
"""The options that may change between invocations of one run directory (they change how much is done now and
how, not what a unit's output is)."""


def open_run_directory(run_dir: RunDirectory, config: dict[str, Any], digest: str) -> RunManifest | None:
    """`run_dir.prepare(digest)`, except that a directory holding no record takes the new configuration (a run that
    stopped on a mistyped model continues with the corrected one), and a refusal names every differing setting.
    Returns the manifest the directory held (None: a new run directory)."""
    manifest = run_dir.read_manifest()
    recorded = manifest.config_hash if manifest is not None else None
    if manifest is None or recorded == digest:
        run_dir.prepare(digest)
        return manifest
    differences = config_differences(manifest.config, config)
    if holds_records(run_dir):
        raise UserError(f"{run_dir.path} holds a run with a different configuration:\n"
                        + "\n".join(f"  {line}" for line in differences)
                        + f"\nchoose another --out for the new settings, or run again with the recorded ones "
                          f"(its manifest.json); only {', '.join(FREE_BETWEEN_INVOCATIONS)} may change between "
                          "invocations")
    run_dir.prepare(str(recorded))  # the lock; the caller writes the new configuration's manifest next
    return manifest


def holds_records(run_dir: RunDirectory) -> bool:
    """Whether any unit was written (a candidate or a reject): then the configuration is fixed."""
    return any(path.exists() and path.stat().st_size > 0 for path in (run_dir.candidates_path, run_dir.rejects_path))


def config_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """`setting: old -> new` for every setting that differs (nested ones by their dotted path), in `new`'s order."""
    flat_old, flat_new = _flatten(old), _flatten(new)
    keys = list(flat_new) + [key for key in flat_old if key not in flat_new]
    return [f"{key}: {_shown(flat_old.get(key, _ABSENT))} -> {_shown(flat_new.get(key, _ABSENT))}"
            for key in keys if flat_old.get(key, _ABSENT) != flat_new.get(key, _ABSENT)]


_ABSENT = object()


def _flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _shown(value: Any) -> str:
    return "(none)" if value is _ABSENT else json.dumps(value, ensure_ascii=False)
