"""Completion tokens a unit's answer will take, for the dry run's cost estimate: measured, not guessed.

The figures come from replaying PRMBench's own GPT-4o injections offline: each answer is written as our full-mode
answer (`modified_question`, `modified_process`, `modified_steps`, `error_steps`, `reason`) and converted to our
edit form (`question`, `edits`, `reason`, the conversion `bench/edit_tokens.py` uses), tokenised with litellm's
gpt-4o counter, and fitted per PRMBench category and output mode as

    completion tokens ~= base + per_solution_token * (tokens of the source solution, a JSON list of steps)

because a full answer writes the solution back (it grows with it) and an edit answer mostly does not.
"""
from __future__ import annotations

import json
from typing import Any

ESTIMATE_SOURCE = ("fitted per category and output mode on PRMBench's GPT-4o answers replayed with the gpt-4o "
                   "tokenizer, bench/completion_tokens.py")
"""Said in the dry run's output next to the estimate."""

# Regenerate with `python bench/completion_tokens.py` (it prints this table). Fitted on records 26-400 of each
# PRMBench train-phase-1 category file (prm800k_train_p1_first400_4o_*.jsonl), so the first 25 — the records in
# tests/fixtures/prmbench, which the README compares against — are held out; multi_solutions on its 10 fixture
# records (prm_test_p12_multi_solutions.first10.jsonl, the only ones we have: a ratio through the origin,
# in-sample).
# classification -> output mode -> (base tokens, tokens per source-solution token)
COMPLETION_TOKEN_FITS: dict[str, dict[str, tuple[float, float]]] = {
    "circular": {"edits": (232.4, 0.397), "full": (281.8, 0.359)},
    "confidence": {"edits": (178.7, 0.109), "full": (151.2, 1.009)},
    "counterfactual": {"edits": (191.5, 0.359), "full": (190.1, 0.892)},
    "deception": {"edits": (176.2, 0.415), "full": (214.4, 0.799)},
    "domain_inconsistency": {"edits": (223.3, 0.284), "full": (231.4, 0.760)},
    "missing_condition": {"edits": (286.2, 0.409), "full": (280.9, 0.620)},
    "redundency": {"edits": (124.3, 0.243), "full": (168.6, 0.999)},
    "step_contradiction": {"edits": (207.2, 0.167), "full": (152.8, 1.000)},
    "multi_solutions": {"full": (0.0, 2.518)},
}
POOLED_FIT: dict[str, tuple[float, float]] = {"edits": (201.0, 0.303), "full": (210.4, 0.800)}
"""All eight single-error categories pooled: for categories PRMBench does not have (custom taxonomies, projudge)."""


def solution_text(steps: list[str]) -> str:
    """The source solution as the fits measure it: its steps as one JSON list."""
    return json.dumps(steps, ensure_ascii=False)


def completion_tokens_estimate(classification: str, mode: str, solution_tokens: int) -> tuple[float, bool]:
    """Estimated completion tokens of one answer, and whether they come from this category's own fit (False: the
    pooled fit)."""
    fit = COMPLETION_TOKEN_FITS.get(classification, {}).get(mode)
    measured = fit is not None
    base, slope = fit if fit is not None else POOLED_FIT[mode]
    return base + slope * solution_tokens, measured


def prmbench_answers(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A PRMBench record's modification written as the answer each output mode asks for: {"full": ..., "edits":
    ...}; a multi-solution record has only "full" (`modified_process` and `reason`)."""
    if record.get("classification") == "multi_solutions":
        return {"full": {"modified_process": record["modified_process"], "reason": record["reason"]}}
    from injector.answer.edits import edits_from_full

    question = None if record["modified_question"] == record["original_question"] else record["modified_question"]
    in_range = [k for k in record["error_steps"] if isinstance(k, int) and 1 <= k <= len(record["modified_process"])]
    return {
        "full": {key: record[key] for key in ("modified_question", "modified_process", "modified_steps",
                                              "error_steps", "reason")},
        "edits": {"question": question,
                  "edits": edits_from_full(record["original_process"], record["modified_process"], in_range),
                  "reason": record["reason"]},
    }


LONG_RUN_SECONDS = 3600.0
"""Above this, the time the rate limits imply is a warning (the dry run), and so is a live ETA (the progress)."""


def rate_limited_seconds(requests: int, tokens: int, rpm: float | None, tpm: float | None) -> float | None:
    """The least time `--rpm` and `--tpm` allow for `requests` requests of `tokens` tokens (prompt and completion,
    as the rate limiter counts them); None without limits."""
    bounds = [60.0 * requests / rpm if rpm else 0.0, 60.0 * tokens / tpm if tpm else 0.0]
    return max(bounds) if rpm or tpm else None


def limits_text(rpm: float | None, tpm: float | None) -> str:
    """`--rpm 450 and --tpm 25000`: the limits given, as flags."""
    return " and ".join(f"--{name} {value:g}" for name, value in (("rpm", rpm), ("tpm", tpm)) if value)


def long_run_advice(rpm: float | None, tpm: float | None) -> str:
    """What the warning says when the rate limits imply more than `LONG_RUN_SECONDS`."""
    return (f"at {limits_text(rpm, tpm)} this run takes over an hour; raise the limits if your provider allows more, "
            "or run part of it now (--limit) and the rest later with the same --out")
