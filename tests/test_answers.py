"""Final-answer extraction and equivalence, including the real PRM800K records."""
from __future__ import annotations

import json
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from injector.answer import final as answers
from injector.answer.final import answers_equivalent, extract_final_answer, final_answer_of_steps, normalize_answer

PRM800K_RECORDS = Path(__file__).parent / "fixtures" / "prm800k" / "prm800k-real-examples.jsonl"

EQUIVALENT = [
    (r"\frac 59", r"\dfrac{5}{9}"),
    (r"\sqrt{53}", r"\sqrt{53}"),
    (r"4210_{5}", r"\[ 4210_5 \]"),
    ("29", "$29$"),
    (r"\left( 1, 2 \right)", "(1,2)"),
    ("0.5", r"\frac{1}{2}"),
    ("3R^2", "3R^2"),
    ("10", "10."),
]

NOT_EQUIVALENT = [
    ("40_9", "40_8"),
    ("29", "30"),
    (r"\frac{1}{2}", r"\frac{1}{3}"),
    (None, "5"),
    ("", "5"),
]


@pytest.mark.parametrize(("a", "b"), EQUIVALENT)
def test_equivalent(a, b):
    assert answers_equivalent(a, b)
    assert answers_equivalent(b, a)


@pytest.mark.parametrize(("a", "b"), NOT_EQUIVALENT)
def test_not_equivalent(a, b):
    assert not answers_equivalent(a, b)
    assert not answers_equivalent(b, a)


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        (r"$\dfrac{5}{9}$", r"\frac{5}{9}"),
        (r"\[ 4210_{5} \]", "4210_5"),
        (r"\left( 1,\, 2 \right).", "(1,2)"),
        (r"$$ a \cdot b $$", r"a\cdot b"),  # the space that ends `\cdot` before a letter stays
        (r"\text{east}", "east"),
        (r"5\text{ cm}", r"5\text{cm}"),
    ],
)
def test_normalize_answer(raw, normalized):
    assert normalize_answer(raw) == normalized


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("So the price is 29 cents.\n\n# Answer\n\n29", "29"),
        (r"Hence the probability is \boxed{\frac{1}{2}} as claimed.", r"\frac{1}{2}"),
        (r"$x = \boxed{\sqrt{2}+\frac{1}{2}}$", r"\sqrt{2}+\frac{1}{2}"),
        (r"First \boxed{3}, then corrected: \boxed{4}.", "4"),
        (r"The answer is $\boxed 5$.", "5"),
        ("Adding up, we get 7.\nFinal Answer: 7", "7"),
        ("Adding up, we get 7.\n\n# Final Answer\n\n7", "7"),
        ("We are still working on it.", None),
        ("", None),
        ("# Answer\n\n", None),
    ],
)
def test_extract_final_answer(text, answer):
    assert extract_final_answer(text) == answer


def test_last_boxed_wins_over_a_later_answer_marker():
    # The rule: the last \boxed{…} anywhere, else the text after the last `# Answer` / `Final Answer:`.
    steps = [r"A first guess is \boxed{3}.", "Checking again, it is 4.\n\n# Answer\n\n4"]
    assert final_answer_of_steps(steps) == "3"


def test_final_answer_of_steps_falls_back_to_the_last_marker():
    steps = ["# Answer\n\n3", "No, recount.", "# Answer\n\n4"]
    assert final_answer_of_steps(steps) == "4"


def _solution_records() -> list[dict]:
    records = [json.loads(line) for line in PRM800K_RECORDS.read_text(encoding="utf-8").splitlines()]
    return [r for r in records if r["label"]["finish_reason"] == "solution"]


def _last_step_text(record: dict) -> str:
    last = record["label"]["steps"][-1]
    if last["chosen_completion"] is not None:
        return last["completions"][last["chosen_completion"]]["text"]
    return last["human_completion"]["text"]


def test_real_prm800k_solutions_answer_the_ground_truth():
    records = _solution_records()
    assert "40_9" in {r["question"]["ground_truth_answer"] for r in records}
    for record in records:
        answer = extract_final_answer(_last_step_text(record))
        assert answers_equivalent(answer, record["question"]["ground_truth_answer"]), answer


def test_works_from_worker_threads_without_logging(caplog):
    # Parsed results are cached; start empty so the threads really call math-verify's parse themselves.
    answers._parsed.cache_clear()
    cases = [(a, b, True) for a, b in EQUIVALENT] + [(a, b, False) for a, b in NOT_EQUIVALENT]
    caplog.set_level(logging.DEBUG)
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(lambda case: answers_equivalent(case[0], case[1]), cases))
    assert results == [expected for _, _, expected in cases]
    assert not [r for r in caplog.records if r.name.startswith("math_verify")]


def test_works_from_a_plain_thread():
    answers._parsed.cache_clear()
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(answers_equivalent(r"\frac{2}{4}", "0.5")))
    thread.start()
    thread.join()
    assert result == [True]
