"""PRMBench's own GPT-4o answers, served by the scripted server as model answers, get exactly the pinned verdicts.

The trajectories are the records' `original_question` / `original_process`; each record's JSON is the model's
answer. The counts were made by hand with the validator and cross-checked for `undeclared_change` with an
independent difflib alignment (same numbers; 88 of 200 injected records, "about half" as formats.md says).
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.cli.commands import main

PRMBENCH = Path(__file__).parent / "fixtures" / "prmbench"

# category -> (file, accepted, reject code counts)
EXPECTED = {
    "circular_logic": ("prm800k_train_p1_first400_4o_circular.jsonl", 11,
                       {"undeclared_change": 12, "error_on_unchanged_step": 1, "index_out_of_range": 1}),
    "confidence": ("prm800k_train_p1_first400_4o_confidence.jsonl", 13,
                   {"undeclared_change": 9, "index_out_of_range": 1, "label_leak": 3, "error_on_unchanged_step": 4}),
    "counterfactual": ("prm800k_train_p1_first400_4o_counterfactual.jsonl", 13,
                       {"undeclared_change": 11, "label_leak": 2, "question_edit_not_allowed": 3,
                        "index_out_of_range": 1}),
    "deception": ("prm800k_train_p1_first400_4o_deception.jsonl", 13,
                  {"undeclared_change": 10, "error_on_unchanged_step": 2, "label_leak": 4, "index_out_of_range": 1}),
    "domain_inconsistency": ("prm800k_train_p1_first400_4o_domain_inconsistency.jsonl", 11,
                             {"undeclared_change": 11, "label_leak": 3, "error_on_unchanged_step": 1,
                              "question_edit_not_allowed": 1}),
    "missing_condition": ("prm800k_train_p1_first400_4o_missing_condition.jsonl", 6,
                          {"undeclared_change": 18, "label_leak": 4, "index_out_of_range": 4}),
    "redundancy": ("prm800k_train_p1_first400_4o_redundency.jsonl", 18,
                   {"undeclared_change": 7, "error_on_unchanged_step": 4}),
    "step_contradiction": ("prm800k_train_p1_first400_4o_step_contradiction.jsonl", 2,
                           {"label_leak": 20, "undeclared_change": 10, "error_on_unchanged_step": 1}),
    "multi_solution": ("prm_test_p12_multi_solutions.first10.jsonl", 10, {}),
}


def _serve_records(server, records: list[dict]) -> None:
    """Answer each request with the PRMBench record whose question and steps the prompt shows."""

    def shown(text: str, content: str) -> bool:
        return text in content or json.dumps(text, ensure_ascii=False)[1:-1] in content

    def script(request: dict) -> str:
        content = request["messages"][-1]["content"]
        matches = [r for r in records
                   if shown(r["original_question"], content) and all(shown(s, content) for s in r["original_process"])]
        best = max(matches, key=lambda r: sum(len(s) for s in r["original_process"]))
        return json.dumps(best, ensure_ascii=False)

    server.script = script


@pytest.mark.parametrize("category", sorted(EXPECTED))
def test_prmbench_answers_get_the_pinned_verdicts(category, scripted_server, tmp_path):
    file_name, accepted, codes = EXPECTED[category]
    path = PRMBENCH / file_name
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    _serve_records(scripted_server, records)
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [
        "run", "--category", category, "--input", str(path), "--model", "openai/scripted",
        "--api-base", scripted_server.api_base, "--out", str(out), "--concurrency", "4", "--max-attempts", "1",
        "--no-cache", "--output-mode", "full",
    ])
    assert result.exit_code == 0, result.output
    candidates = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()] if (
        out / "rejects.jsonl").exists() else []
    assert len(candidates) == accepted
    assert len(candidates) + len(rejects) == len(records)  # nothing lost
    assert dict(Counter(code for reject in rejects for code in reject["codes"])) == codes
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["counts"]["candidates"] == accepted and manifest["status"] == "finished"
    for candidate in candidates if category != "multi_solution" else []:
        # The emitted labels are the derived ones: every step outside modified_steps is an original step verbatim.
        unchanged = [s for k, s in enumerate(candidate["modified_process"], 1) if k not in candidate["modified_steps"]]
        assert all(step in candidate["original_process"] for step in unchanged)
        assert all(1 <= k <= len(candidate["modified_process"]) for k in candidate["error_steps"])
        assert candidate["classification"] == records[0]["classification"]
