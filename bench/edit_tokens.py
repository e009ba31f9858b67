"""Output tokens of edit mode vs PRMBench's seven-field answer, on the same modifications.

Each PRMBench fixture record (200 GPT-4o injections, tests/fixtures/prmbench/) is serialized twice with
`json.dumps(..., ensure_ascii=False)`: as PRMBench's seven fields, and as our edit contract (`question`, `edits`,
`reason`) expressing the same modification, each edit with exactly the keys the strict response schema gives its
op (`op`, `step`/`after`, `text`, `error`; no null `explanation` unless a taxonomy asks for explanations). Tokens are counted with litellm's counter for gpt-4o and pooled (sum
over sum). Also counts the records that full mode rejects as `undeclared_change` (zero in edit mode by
construction: untouched steps are never written back).

    python bench/edit_tokens.py
"""
from __future__ import annotations

import json
import os
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from injector.answer.contract import parse_answer  # noqa: E402
from injector.engines.llm import import_litellm  # noqa: E402
from injector.runner.estimates import prmbench_answers  # noqa: E402
from injector.sources import load_trajectories  # noqa: E402
from injector.taxonomy import Taxonomy  # noqa: E402
from injector.inject.validation import validate_answer  # noqa: E402

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "prmbench"
SEVEN_FIELDS = ("original_question", "modified_question", "original_process", "modified_process", "modified_steps",
                "error_steps", "reason")


def main() -> None:
    litellm = import_litellm()
    taxonomy = Taxonomy.load()

    def tokens(value: dict) -> int:
        return litellm.token_counter(model="gpt-4o", text=json.dumps(value, ensure_ascii=False))

    rows = []
    for path in sorted(FIXTURES.glob("prm800k_train_p1_first400_4o_*.jsonl")):
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        category = next(c for c in taxonomy.categories if c.prmbench_id == records[0]["classification"])
        seven = edits = undeclared = 0
        for trajectory, record in zip(load_trajectories(path, "prmbench"), records):
            seven += tokens({key: record[key] for key in SEVEN_FIELDS})
            edits += tokens(prmbench_answers(record)["edits"])
            verdict = validate_answer(taxonomy, category, trajectory, parse_answer(json.dumps(record)))
            undeclared += "undeclared_change" in verdict.codes
        rows.append((category.id, len(records), seven, edits, undeclared))

    print(f"{'category':22} {'records':>7} {'seven-field':>11} {'edits':>7} {'ratio':>6} {'undeclared (full)':>18}")
    total = ["pooled", *[sum(row[i] for row in rows) for i in range(1, 5)]]
    for name, count, seven, edits, undeclared in [*rows, total]:
        print(f"{name:22} {count:7d} {seven:11d} {edits:7d} {edits / seven:6.2f} {undeclared:18d}")
    print(f"output tokens per candidate: seven-field {total[2] / total[1]:.0f}, edits {total[3] / total[1]:.0f}; "
          "goal: edits <= 0.4 of seven-field")


if __name__ == "__main__":
    main()
