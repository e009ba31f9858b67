"""The guide's size rules for `injector/`: no module over 400 lines, no function over 60 lines, no signature over
10 parameters (`self`/`cls` not counted). Request and settings models (pydantic classes) have fields, not
parameters, so they never count here.

`BEING_SPLIT` lists the files whose split is in progress elsewhere; it is to be emptied, not added to.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "injector"
MAX_MODULE_LINES, MAX_FUNCTION_LINES, MAX_PARAMETERS = 400, 60, 10

BEING_SPLIT: tuple[str, ...] = ()
"""Paths relative to `injector/` (a trailing `/`: a whole package)."""


def _allowed(relative: str) -> bool:
    return any(relative.startswith(prefix) if prefix.endswith("/") else relative == prefix for prefix in BEING_SPLIT)


def violations(root: Path = PACKAGE) -> list[str]:
    """One line per broken rule in the modules under `root` (outside `BEING_SPLIT`)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root).as_posix()
        if _allowed(relative):
            continue
        source = path.read_text(encoding="utf-8")
        lines = source.count("\n")
        if lines > MAX_MODULE_LINES:
            found.append(f"{relative}: {lines} lines (at most {MAX_MODULE_LINES})")
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            arguments = node.args
            parameters = (len(arguments.posonlyargs) + len(arguments.args) + len(arguments.kwonlyargs)
                          + bool(arguments.vararg) + bool(arguments.kwarg))
            first = (arguments.posonlyargs + arguments.args)[:1]
            if first and first[0].arg in ("self", "cls"):
                parameters -= 1
            if length > MAX_FUNCTION_LINES:
                found.append(f"{relative}:{node.lineno} {node.name}: {length} lines (at most {MAX_FUNCTION_LINES})")
            if parameters > MAX_PARAMETERS:
                found.append(f"{relative}:{node.lineno} {node.name}: {parameters} parameters (at most "
                             f"{MAX_PARAMETERS}; take a settings model instead)")
    return found


def test_no_module_function_or_signature_is_too_large():
    assert violations() == []


def test_the_rules_catch_what_they_forbid(tmp_path):
    # The check itself must be able to fail: a long module, a long function, a wide signature.
    (tmp_path / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    body = "".join("    y = 1\n" for _ in range(MAX_FUNCTION_LINES))
    (tmp_path / "function.py").write_text(f"def long():\n{body}\n")
    names = ", ".join(f"a{k}" for k in range(MAX_PARAMETERS))
    (tmp_path / "wide.py").write_text(f"class C:\n    def ok(self, {names}):\n        pass\n"
                                      f"    def wide(self, {names}, *rest):\n        pass\n")
    found = violations(tmp_path)
    assert found == [
        f"function.py:1 long: {MAX_FUNCTION_LINES + 1} lines (at most {MAX_FUNCTION_LINES})",
        f"long.py: {MAX_MODULE_LINES + 1} lines (at most {MAX_MODULE_LINES})",
        f"wide.py:4 wide: {MAX_PARAMETERS + 1} parameters (at most {MAX_PARAMETERS}; take a settings model instead)",
    ]


def test_the_files_being_split_are_still_there():
    # An entry whose file or package is gone (moved, renamed) would silently exempt nothing: drop it then.
    assert [prefix for prefix in BEING_SPLIT if not (PACKAGE / prefix).exists()] == []
