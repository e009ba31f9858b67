"""The entry-point loader (`injector.util.plugins`): plugins found through installed metadata, broken ones skipped
with one warning line naming them."""
from __future__ import annotations

import logging
import sys
import textwrap
from pathlib import Path

import pytest

from injector.util.plugins import entry_point_names, load_entry_points

GROUP = "prm_injector.test_plugins"


def _install(root: Path, dist: str, modules: dict[str, str], points: dict[str, str]) -> None:
    """A distribution as pip leaves it in a --target directory: its modules and a .dist-info with entry points."""
    for name, source in modules.items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    lines = "\n".join(f"{name} = {value}" for name, value in points.items())
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{lines}\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("good_plugin", "broken_plugin"):
        sys.modules.pop(name, None)


def test_loads_each_entry_point_by_name(site):
    _install(site, "good_dist", {"good_plugin": "THING = {'kind': 'demo'}\nOTHER = 3\n"},
             {"thing": "good_plugin:THING", "other": "good_plugin:OTHER"})
    assert load_entry_points(GROUP) == {"other": 3, "thing": {"kind": "demo"}}


def test_a_group_nobody_offers_is_empty():
    assert load_entry_points("prm_injector.nobody_offers_this") == {}


def test_broken_plugins_are_skipped_with_one_line_each(site, caplog):
    _install(site, "good_dist", {"good_plugin": "THING = 1\n"}, {"thing": "good_plugin:THING"})
    _install(site, "broken_dist", {"broken_plugin": "raise RuntimeError('boom\\nsecond line')\n"},
             {"raises": "broken_plugin:X", "missing": "no_such_module_here:X"})
    with caplog.at_level(logging.WARNING, logger="injector"):
        loaded = load_entry_points(GROUP, expect=int)
    assert loaded == {"thing": 1}
    messages = {record.getMessage() for record in caplog.records}
    assert len(messages) == 2 and all("\n" not in message for message in messages)
    by_name = {message.split("'")[1]: message for message in messages}
    assert "from broken_dist 0.1" in by_name["raises"] and "RuntimeError: boom second line" in by_name["raises"]
    assert "ModuleNotFoundError" in by_name["missing"]


def test_an_object_of_the_wrong_kind_is_skipped(site, caplog):
    _install(site, "good_dist", {"good_plugin": "THING = 'a string'\nNUMBER = 2\n"},
             {"thing": "good_plugin:THING", "number": "good_plugin:NUMBER"})
    with caplog.at_level(logging.WARNING, logger="injector"):
        assert load_entry_points(GROUP, expect=int) == {"number": 2}
    [message] = [record.getMessage() for record in caplog.records]
    assert message.startswith("plugin 'thing' (") and "is a str where int was expected; skipped" in message


def test_the_same_name_twice_keeps_one_and_says_so(site, caplog):
    _install(site, "good_dist", {"good_plugin": "THING = 1\n"}, {"thing": "good_plugin:THING"})
    _install(site, "other_dist", {}, {"thing": "good_plugin:THING"})
    with caplog.at_level(logging.WARNING, logger="injector"):
        assert load_entry_points(GROUP) == {"thing": 1}
    [message] = [record.getMessage() for record in caplog.records]
    assert "already has this name" in message


def test_names_are_listed_without_loading_and_taken_names_are_refused(site, caplog):
    _install(site, "good_dist", {"good_plugin": "THING = 1\nOTHER = 2\n"},
             {"thing": "good_plugin:THING", "other": "good_plugin:OTHER"})
    assert entry_point_names(GROUP) == ("other", "thing")
    assert "good_plugin" not in sys.modules
    with caplog.at_level(logging.WARNING, logger="injector"):
        assert load_entry_points(GROUP, taken=("thing",)) == {"other": 2}
    [message] = [record.getMessage() for record in caplog.records]
    assert message.startswith("plugin 'thing' (") and "the toolkit has its own with this name; skipped" in message
