"""Paths mypy found unchecked (issue 13): each used to end in a traceback, now in a reported problem."""
from __future__ import annotations

import pytest

from injector.answer.align import normalize_step
from injector.answer.contract import Edit
from injector.answer.edits import apply_edits
from injector.util.errors import UserError
from injector.taxonomy.hooks import load_hook

ORIGINAL = ["Let $x = 2$.", "Then $x + 3 = 5$.", "# Answer\n\n5"]


def test_an_edit_without_its_index_is_out_of_range_not_a_crash():
    # `Edit` itself refuses these; an edit built without validation (model_construct) must not crash the applier.
    edits = [Edit.model_construct(op="replace", step=None, text="x", error=True),
             Edit.model_construct(op="insert", after=None, text="y", error=True)]
    applied = apply_edits(ORIGINAL, edits, normalize=normalize_step)
    assert applied.problems == [("index_out_of_range", "replace of step None; insert after None: the original "
                                 "solution has steps 1..3 (insert after 0..3); indices refer to the original steps")]
    assert applied.modified_process == ORIGINAL


def test_an_insert_without_text_becomes_an_empty_step():
    edits = [Edit.model_construct(op="insert", after=1, text=None, error=True, explanation=None)]
    applied = apply_edits(ORIGINAL, edits, normalize=normalize_step)
    assert applied.modified_process == [ORIGINAL[0], "", *ORIGINAL[1:]]
    assert applied.modified_steps == [2] and applied.error_steps == [2]


def test_a_hook_file_python_cannot_import_is_a_user_error(tmp_path):
    hook = tmp_path / "checks.txt"
    hook.write_text("class Check:\n    pass\n")
    with pytest.raises(UserError, match=r"checks.txt cannot be imported as a Python module; name it NAME.py"):
        load_hook(f"{hook}:Check")
