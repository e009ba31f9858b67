"""PRMBench's `# Answer\\n3` answer steps (a literal backslash and `n`, issue 12 "Also"): the final answer and the
answer step are recognised, the stored text stays byte-identical, and `\\n` elsewhere stays LaTeX."""
from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import OfflineEngine, Taxonomy, inject_one, load_trajectories
from injector.answers import extract_final_answer, final_answer_of_steps
from injector.cli import main
from injector.engines.offline import split_answer

FIXTURE = Path(__file__).parent / "fixtures" / "literal_newline" / "phase2_literal_newline.jsonl"
RAW = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize(("text", "answer"), [
    ("# Answer\\n3", "3"),
    ("# Answer\\n\\n3", "3"),
    ("So $x = 4$.\\n\\n# Answer\\n\\n4", "4"),
    ("# Answer \\n 12", "12"),
    ("# Answer\\n\\nu", "\\nu"),  # a literal break, then the LaTeX command \nu
    ("# Answer\n\n\\nabla f", "\\nabla f"),  # real line breaks: \nabla is LaTeX
    ("We get $x \\neq 2$.\n\n# Answer\n\n\\neq", "\\neq"),
])
def test_the_final_answer_after_a_literal_newline(text: str, answer: str) -> None:
    assert extract_final_answer(text) == answer


def test_the_fixture_records_load_byte_identical_with_their_answers() -> None:
    trajectories = list(load_trajectories(FIXTURE))
    assert [t.steps for t in trajectories] == [r["original_process"] for r in RAW]
    for trajectory, raw in zip(trajectories, RAW):
        text = raw["original_question"] + "\n" + "\n".join(raw["original_process"])
        assert trajectory.id == f"{raw['idx']}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    assert [final_answer_of_steps(t.steps) for t in trajectories] == ["3", "4", "1"]
    # The offline engine sees the whole `# Answer\n3` step as the answer tail, with nothing before it.
    assert split_answer(RAW[0]["original_process"][-1]) == ("", "# Answer\\n3")
    assert split_answer(RAW[1]["original_process"][-1])[1] == "\\n\\n# Answer\\n\\n4"


@pytest.mark.parametrize("number", [0, 1, 2])
def test_circular_logic_confirms_in_the_last_reasoning_step_and_keeps_the_answer_step(number: int) -> None:
    taxonomy = Taxonomy.load()
    trajectory = list(load_trajectories(FIXTURE))[number]
    candidate = asyncio.run(inject_one(taxonomy, taxonomy.category("circular_logic"), trajectory, OfflineEngine()))
    assert not hasattr(candidate, "codes"), candidate
    answer = final_answer_of_steps(trajectory.steps)
    modified = candidate.modified_process
    assert f"${answer}$" in modified[1]  # the assumption, inserted after step 1
    assert f"$\\n{answer}$" not in "".join(modified) and f"\\n{answer}" not in candidate.reason
    last = trajectory.steps[-1]
    if split_answer(last)[0].strip():  # an answer tail inside a reasoning step: the text goes before the tail
        assert modified[-1].endswith(split_answer(last)[1]) and "This agrees" in modified[-1]
        assert modified[-1].index("This agrees") < modified[-1].index("# Answer")
    else:  # a step that is only the answer stays exactly as it was; the step before it confirms
        assert modified[-1] == last
        assert "This agrees with the value" in modified[-2]


def test_an_offline_run_keeps_unchanged_steps_byte_identical(tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["run", "--category", "all", "--input", str(FIXTURE), "--out", str(out)])
    assert result.exit_code == 0, result.output
    candidates = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert {c["category"] for c in candidates} >= {"circular_logic", "redundancy"}
    sources = {r["idx"]: r["original_process"] for r in RAW}
    for candidate in candidates:
        assert candidate["original_process"] == sources[candidate["idx"]]
        unchanged = [step for number, step in enumerate(candidate["modified_process"], 1)
                     if number not in candidate["modified_steps"]]
        assert all(step in sources[candidate["idx"]] for step in unchanged)
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert not [r for r in rejects if {"answer_changed", "answer_unknown"} & set(r["codes"])]
