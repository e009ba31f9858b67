"""What a custom category's prompt says about itself: its error kind in plain words ("a sign error", never "a sign
error error"), and a "Worked examples" section only when it has examples (from its YAML `examples:` key)."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from injector import Taxonomy, Trajectory, render_messages

TRAJECTORY = Trajectory(id="t", question="What is $2 - 3$?",
                        steps=["Let $x = 2$.", "Then $x - 3 = -1$.", "So the answer is -1.\n\n# Answer\n\n-1"],
                        answer="-1")
EXAMPLE = {
    "question": "What is $2 - 3$?",
    "steps": ["Let $x = 2$.", "Then $x - 3 = -1$.", "So the answer is -1.\n\n# Answer\n\n-1"],
    "answer": {"modified_process": ["Let $x = 2$.", "Then $x - 3 = 1$.", "So the answer is 1.\n\n# Answer\n\n1"],
               "error_steps": [2, 3], "reason": "Step 2 drops the minus sign; step 3 carries it to the answer."},
}


def load(tmp_path: Path, category_id: str, examples: list | None = None) -> Taxonomy:
    (tmp_path / "sign.j2").write_text('{% extends "_base.j2" %}{% block guidance %}Flip a sign.{% endblock %}')
    category = f"  - id: {category_id}\n    name: Sign Slip\n    definition: Flip one sign.\n    template: sign.j2\n"
    if examples is not None:
        category += "    examples:\n" + textwrap.indent(json.dumps(examples), "      ") + "\n"
    (tmp_path / "taxonomy.yaml").write_text("name: mine\ncategories:\n" + category)
    return Taxonomy.load(tmp_path / "taxonomy.yaml")


@pytest.mark.parametrize("mode", ["edits", "full"])
@pytest.mark.parametrize(("category_id", "said"), [("sign_error", "a sign error"), ("sign", "a sign error"),
                                                    ("arithmetic_slip", "an arithmetic slip error"),
                                                    ("unit_slip", "a unit slip error")])
def test_the_error_kind_is_said_once(tmp_path, category_id, said, mode):
    taxonomy = load(tmp_path, category_id)
    system, user = (m["content"] for m in render_messages(taxonomy, taxonomy.category(category_id), TRAJECTORY,
                                                          output_mode=mode))
    assert f"why it is {said} and not another kind." in system
    assert user.rstrip().splitlines()[-1].startswith(f"Inject one {said.split(' ', 1)[1]} into these 3 steps")
    assert "error error" not in system + user


def test_a_category_without_examples_has_no_worked_examples_section(tmp_path):
    taxonomy = load(tmp_path, "sign_error")
    other = TRAJECTORY.model_copy(update={"question": "What is $5 - 3$?"})  # not the example's own problem
    system = render_messages(taxonomy, taxonomy.category("sign_error"), other)[0]["content"]
    assert "Worked examples" not in system and "## Example" not in system


def test_the_yaml_examples_key_fills_the_worked_examples_section(tmp_path):
    taxonomy = load(tmp_path, "sign_error", [EXAMPLE])
    other = TRAJECTORY.model_copy(update={"question": "What is $5 - 3$?"})  # not the example's own problem
    system = render_messages(taxonomy, taxonomy.category("sign_error"), other)[0]["content"]
    assert system.count("# Worked examples") == 1 and system.count("## Example ") == 1
    assert '{"op": "replace", "step": 2, "text": "Then $x - 3 = 1$.", "error": true}' in system
