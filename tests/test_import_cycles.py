"""The import-cycle contract CI runs (`.ci/import_contracts.py`, configured in pyproject.toml): it finds cycles
through function-level imports and through a package's `__init__`, and injector has none."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _contract_type():
    spec = importlib.util.spec_from_file_location("import_contracts", ROOT / ".ci" / "import_contracts.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.AcyclicModulesContract


def _check(package: str):
    contract = _contract_type()(name="no cycles", session_options={}, contract_options={"containers": [package]})
    return contract.check(grimp.build_graph(package, cache_dir=None), verbose=False)


@pytest.fixture
def make_package(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(name: str, files: dict[str, str]) -> str:
        for relative, text in files.items():
            path = tmp_path / name / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return name

    yield make
    for module in [m for m in sys.modules if m.startswith("cyclepkg")]:
        del sys.modules[module]


def test_a_cycle_through_a_function_level_import_is_found(make_package):
    package = make_package("cyclepkg_lazy", {
        "__init__.py": "",
        "edits.py": "def apply():\n    from .validate import align\n    return align\n",
        "validate.py": "from .edits import apply\n\ndef align():\n    return apply\n",
        "other.py": "from .validate import align\n",
    })
    check = _check(package)
    assert not check.kept
    assert [component for component, _ in check.metadata["cycles"]] == [
        ["cyclepkg_lazy.edits", "cyclepkg_lazy.validate"]]
    (component, cycle), = check.metadata["cycles"]
    assert [(importer, imported) for importer, imported, _ in cycle] == [
        ("cyclepkg_lazy.edits", "cyclepkg_lazy.validate"), ("cyclepkg_lazy.validate", "cyclepkg_lazy.edits")]
    assert "l.2: from .validate import align" in cycle[0][2]


def test_a_cycle_through_the_package_init_is_found(make_package):
    package = make_package("cyclepkg_init", {
        "__init__.py": "__version__ = '1'\nfrom .pipeline import run\n",
        "pipeline.py": "from . import __version__\n\ndef run():\n    return __version__\n",
    })
    check = _check(package)
    assert [component for component, _ in check.metadata["cycles"]] == [["cyclepkg_init", "cyclepkg_init.pipeline"]]


def test_an_acyclic_package_keeps_the_contract(make_package):
    package = make_package("cyclepkg_fine", {
        "__init__.py": "from .version import __version__\nfrom .pipeline import run\n",
        "version.py": "__version__ = '1'\n",
        "pipeline.py": "from .version import __version__\n\ndef run():\n    from .heavy import load\n    return load\n",
        "heavy.py": "def load():\n    return 1\n",
    })
    check = _check(package)
    assert check.kept and check.metadata["cycles"] == []


def test_injector_has_no_import_cycles():
    check = _check("injector")
    assert check.metadata["cycles"] == []
