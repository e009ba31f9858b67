"""Category hooks: Python named by a taxonomy (`hook: checks.py:MyCheck`), imported only when the category is used.

A hook is code. It loads only from a taxonomy the user named (`--taxonomy`), from a file that really lies (symlinks
followed) in the taxonomy's own directory; never from a dataset, a run directory or a downloaded file (a run's own
taxonomy is read with its hooks off: see `taxonomy.run_taxonomy`). A hook object may have:

- `context(trajectory) -> dict`: extra variables for the category's template (the user message);
- `check(trajectory, verdict) -> iterable of (code, message)`: extra rules; each failure is a reason code, sent
  back to the model like any other.
"""
from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Protocol

from injector.util.errors import UserError

HOOK_MODULE_PREFIX = "injector_hook_"
"""A loaded hook file's module name in `sys.modules`: this prefix and a hash of its path."""


class Hook(Protocol):
    def context(self, trajectory: Any) -> dict[str, Any]: ...

    def check(self, trajectory: Any, verdict: Any) -> list[tuple[str, str]]: ...


def load_hook(spec: str, allowed_dirs: tuple[Path, ...] | None = None) -> Hook:
    """Import `FILE:NAME` (FILE absolute, as the taxonomy loader resolves it); a class is instantiated.

    With `allowed_dirs` (a taxonomy read from YAML), FILE must really lie in one of them, symlinks followed:
    checked here, at import time, too, as a link may have changed since the taxonomy was loaded.
    """
    file, _, name = spec.rpartition(":")
    if not file or not name:
        raise UserError(f"hook {spec!r}: expected FILE.py:NAME, e.g. checks.py:MyCheck")
    path = Path(file)
    if not path.is_file():
        raise UserError(f"hook {spec!r}: {path} not found; hooks are relative to the taxonomy file")
    real = path.resolve()
    if allowed_dirs is not None and not any(real.is_relative_to(d) for d in allowed_dirs):
        raise UserError(f"hook {spec!r}: {path} resolves (through a symlink) to {real}, outside the taxonomy's "
                        "directory; refusing to import it. Copy the file into the taxonomy's directory")
    module_name = HOOK_MODULE_PREFIX + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    module = sys.modules.get(module_name)
    if module is None:
        loader_spec = importlib.util.spec_from_file_location(module_name, real)  # the file checked above
        if loader_spec is None or loader_spec.loader is None:  # not a name Python imports as source
            raise UserError(f"hook {spec!r}: {path} cannot be imported as a Python module; name it NAME.py")
        module = importlib.util.module_from_spec(loader_spec)
        try:
            loader_spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - the hook's own bug: reported with where (exit 2)
            raise UserError(f"hook {spec!r}: importing {path} failed: {type(exc).__name__}: {exc}") from None
        sys.modules[module_name] = module
    target = getattr(module, name, None)
    if target is None:
        raise UserError(f"hook {spec!r}: {path} has no {name!r}")
    hook = target() if isinstance(target, type) else target
    if not (hasattr(hook, "context") or hasattr(hook, "check")):
        raise UserError(f"hook {spec!r}: {name} has neither a `context` nor a `check` method")
    return hook
