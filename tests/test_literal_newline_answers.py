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
from injector.engines.offline import WITHDRAWN_OPERATORS
from injector.answer.final import extract_final_answer, final_answer_of_steps
from injector.cli.commands import main
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
def test_circular_logic_keeps_the_answer_step_byte_identical(number: int) -> None:
    """The loop replaces a reasoning step; an answer step (or a step carrying the `# Answer\\n` tail) stays as it
    was, and no literal `\\n` leaks into the loop's math or reason."""
    taxonomy = Taxonomy.load()
    trajectory = list(load_trajectories(FIXTURE))[number]
    candidate = asyncio.run(inject_one(taxonomy, taxonomy.category("circular_logic"), trajectory, OfflineEngine(operators=WITHDRAWN_OPERATORS)))
    if number == 0:  # "he has $2 + 1 = 3$ apples" can be assumed and worked back
        assert not hasattr(candidate, "codes"), candidate
    if hasattr(candidate, "codes"):
        assert candidate.codes == ["not_applicable"]
        return
    answer = final_answer_of_steps(trajectory.steps)
    modified = candidate.modified_process
    assert modified[-1] == trajectory.steps[-1] and final_answer_of_steps(modified) == answer
    assert all(split_answer(modified[k - 1])[1] == "" for k in candidate.error_steps)
    assert f"\\n{answer}" not in "".join(modified[:-1]) and f"\\n{answer}" not in candidate.reason


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
