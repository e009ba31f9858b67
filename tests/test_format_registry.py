"""The record-format registry in one process: a RecordFormat's own checks, and how plugins join, clash and fail
(entry points of a distribution placed on sys.path, as pip leaves one in a --target directory)."""
from __future__ import annotations

import logging
import re
import sys
import textwrap

import pytest

from injector.sources import registry
from injector.sources.registry import ENTRY_POINT_GROUP, RecordFormat, detect_format, format_names, get_format
from injector.util.errors import UserError

PLUGIN = '''
from injector.sources.registry import RecordFormat

def read(record, origin, where, options):
    raise AssertionError("not read in these tests")

SHAPED = RecordFormat(name="shaped", description="Records with a shape key.", detect=lambda r: "shape" in r,
                      read=read)
GREEDY = RecordFormat(name="greedy", description="Claims question-and-steps records.",
                      detect=lambda r: "question" in r, read=read)
MISNAMED = RecordFormat(name="other-name", description="Declares another name.", detect=lambda r: False, read=read)
CLASH = RecordFormat(name="prmbench", description="Would replace a bundled format.", detect=lambda r: False,
                     read=read)
'''


def _clear() -> None:
    for cached in (registry.format_names, registry._plugins):
        cached.cache_clear()
    sys.modules.pop("registry_test_plugin", None)


@pytest.fixture
def plugins(tmp_path, monkeypatch):
    (tmp_path / "registry_test_plugin.py").write_text(textwrap.dedent(PLUGIN))
    info = tmp_path / "registry_test_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: registry-test-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nshaped = registry_test_plugin:SHAPED\n"
                                           "greedy = registry_test_plugin:GREEDY\n"
                                           "misnamed = registry_test_plugin:MISNAMED\n"
                                           "prmbench = registry_test_plugin:CLASH\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _clear()
    yield
    monkeypatch.undo()
    _clear()


@pytest.mark.parametrize("changes, message", [
    ({"name": "Has Space"}, "use lower case letters, digits, '_' and '-'"),
    ({"description": "two\nlines"}, "the description must be one non-empty line"),
    ({"options": ("strict", "colour")}, "unknown options ['colour']"),
])
def test_a_record_format_checks_its_declaration(changes, message):
    fields = {"name": "fine", "description": "One line.", "detect": lambda record: False,
              "read": lambda *args: "skipped", **changes}
    with pytest.raises(ValueError, match=re.escape(message)):
        RecordFormat(**fields)


def test_plugins_join_the_names_and_detection_after_the_bundled_specific_ones(plugins, caplog):
    assert format_names()[-3:] == ("greedy", "misnamed", "shaped")  # listed from metadata, nothing imported
    assert "registry_test_plugin" not in sys.modules
    with caplog.at_level(logging.WARNING, logger="injector"):
        assert detect_format({"shape": 1}) == "shaped"
        # a plugin's detection comes before the catch-all trajectories format, after the specific bundled ones
        assert detect_format({"question": "Q", "steps": ["s"]}) == "greedy"
        assert detect_format({"original_process": ["s"], "question": "Q"}) == "prmbench"
    assert get_format("prmbench").description != "Would replace a bundled format."
    warnings = sorted(record.getMessage() for record in caplog.records)
    assert len(warnings) == 2
    assert "the entry point and the format must have the same name" in warnings[0]
    assert warnings[1].startswith("plugin 'prmbench' (") and "the toolkit has its own with this name" in warnings[1]
    with pytest.raises(UserError, match="input format 'misnamed' comes from a plugin that cannot be loaded"):
        get_format("misnamed")
