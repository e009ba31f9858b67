"""A verify pass over a replayed PRMBench run: the train-phase-1 fixture records are served as GPT-4o's answers
(`inject run`, as in test_prmbench_verdicts.py), then `inject verify` judges the candidates with a scripted judge
that reads only the prompt and points at the first step carrying a surface cue of the critique's kind (the wording
PRMBench's errors give away, formats.md), or -1. The verdict counts are pinned (the issue's closing note lists
them); the run's own files are unchanged by the pass.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from click.testing import CliRunner
from test_prmbench_verdicts import EXPECTED, PRMBENCH, _serve_records
from test_verify import _kind_of, files_of, shown_steps

from injector.cli.commands import main
from injector.triage.verdicts import VERIFY_SUMMARY_FILE, read_verdicts

CUES = {
    "error": re.compile(r"\b(clearly|obviously|certainly|confidently|incorrectly|always|never)\b", re.IGNORECASE),
    "redundancy": re.compile(r"\b(verify|again|double-check|check|confirm|recall)\w*", re.IGNORECASE),
    "circular": re.compile(r"\b(assum\w*|we know that|since we know)\b", re.IGNORECASE),
}

# category -> verdict counts of the pass (the replay's candidates: 97 of the 210 records)
VERDICT_COUNTS = {
    "circular_logic": {"confirmed": 5, "late": 1, "original_flagged": 5},
    "confidence": {"confirmed": 5, "missed": 8},
    "counterfactual": {"missed": 13},
    "deception": {"missed": 13},
    "domain_inconsistency": {"missed": 11},
    "missing_condition": {"missed": 6},
    "multi_solution": {"confirmed": 10},
    "redundancy": {"confirmed": 10, "late": 3, "missed": 3, "original_flagged": 2},
    "step_contradiction": {"missed": 2},
}


def cue_judge(request: dict) -> str:
    messages = request["messages"]
    kind = _kind_of(messages[0]["content"])
    steps = shown_steps(messages[1]["content"])
    first = next((k for k, step in enumerate(steps, 1) if CUES[kind].search(step)), -1)
    return json.dumps({"first_error_step": first, "reason": "a cue word" if first > 0 else "no cue word"})


def test_a_verify_pass_over_a_replayed_prmbench_run(scripted_server, tmp_path):
    counts: dict[str, dict[str, int]] = {}
    for category, (file_name, accepted, _) in sorted(EXPECTED.items()):
        path = PRMBENCH / file_name
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        _serve_records(scripted_server, records)
        run = tmp_path / category
        result = CliRunner().invoke(main, [
            "run", "--category", category, "--input", str(path), "--model", "openai/scripted",
            "--api-base", scripted_server.api_base, "--out", str(run), "--concurrency", "4", "--max-attempts", "1",
            "--no-cache", "--output-mode", "full"])
        assert result.exit_code == 0, result.output
        before = files_of(run)
        scripted_server.script = cue_judge
        result = CliRunner().invoke(main, ["verify", str(run), "--model", "openai/judge", "--api-base",
                                           scripted_server.api_base, "--no-cache"])
        assert result.exit_code == 0, result.output
        assert files_of(run) == before
        verdicts = read_verdicts(run)
        assert len(verdicts) == accepted
        counts[category] = dict(Counter(record.verdict for record in verdicts.values()))
        summary = json.loads((run / VERIFY_SUMMARY_FILE).read_text())
        assert summary["verdicts"].get(category, {}) == counts[category]
    assert counts == VERDICT_COUNTS
