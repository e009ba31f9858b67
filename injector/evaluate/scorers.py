"""Step scores for `inject eval`: from a scores file a PRM wrote (here), an LLM judge (`judge.py`) or a PRM that vLLM
serves (`prm_server.py`). Each gives, per item id, one score in 0..1 per step, or None for an answer that could not
be read (a judge's)."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from injector.util.errors import InputError, UserError
from injector.evaluate.metrics import EvalItem
from injector.util.json_bounds import JsonRefused, loads_bounded

SCORES_LINE = '{"id": "...", "step_scores": [0.93, 0.12, ...]}'


@dataclass
class ScorerResult:
    """What a scorer returns: scores per item id (None: an invalid answer), and what the report says of it."""

    scores: dict[str, tuple[float, ...] | None]
    scorer: dict[str, Any]
    """kind (scores, judge, prm_server) and its settings: file, model, server host."""
    validity: float | None = None
    """Share of items with a valid answer (a judge's); None for scorers that always give scores."""
    cost: float | None = None
    notes: list[str] = field(default_factory=list)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per item id, what goes into its predictions line beyond the scores (a judge's attempts and problem)."""


def check_step_scores(value: Any, n_steps: int) -> str | None:
    """Why `value` is not `n_steps` scores in 0..1, or None when it is."""
    if not isinstance(value, list):
        return "`step_scores` must be a list of numbers"
    if len(value) != n_steps:
        return f"{len(value)} step scores for a solution of {n_steps} steps; give one score per step"
    for k, score in enumerate(value, 1):
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            return f"step {k}: score {json.dumps(score)} is not a number"
        if not math.isfinite(score):
            return f"step {k}: score {score} is not a finite number"
        if not 0 <= score <= 1:
            return f"step {k}: score {score} is outside 0..1; give probabilities (e.g. apply a sigmoid first)"
    return None


def read_scores(path: str | Path, items: Sequence[EvalItem]) -> ScorerResult:
    """Scores from a JSONL file of `{"id", "step_scores"}`: every item of the split must have one line with one
    score in 0..1 per step; ids the split lacks are ignored (said in a note). Errors name FILE:LINE (exit 2)."""
    path = Path(path)
    by_id = {item.id: item for item in items}
    scores: dict[str, tuple[float, ...] | None] = {}
    lines: dict[str, int] = {}
    unknown = 0
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise UserError(f"{path}: cannot read the scores file ({exc.strerror or exc})") from None
    with handle:
        try:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    record = loads_bounded(line)
                except json.JSONDecodeError as exc:
                    raise InputError(path, number, f"not JSON ({exc.msg}); write one {SCORES_LINE} per line") from None
                except JsonRefused as exc:
                    raise InputError(path, number, f"the line {exc}; write one {SCORES_LINE} per line") from None
                if not isinstance(record, dict) or not isinstance(record.get("id"), str):
                    raise InputError(path, number, f"expected an object with a string `id`: {SCORES_LINE}")
                item_id = record["id"]
                if item_id in lines:
                    raise InputError(path, number, f"id {item_id!r} again (first on line {lines[item_id]})")
                lines[item_id] = number
                item = by_id.get(item_id)
                if item is None:
                    unknown += 1
                    continue
                problem = check_step_scores(record.get("step_scores"), len(item.steps))
                if problem:
                    raise InputError(path, number, f"id {item_id!r}: {problem}")
                scores[item_id] = tuple(float(score) for score in record["step_scores"])
        except UnicodeDecodeError:
            raise UserError(f"{path}: not UTF-8 text") from None
    missing = [item.id for item in items if item.id not in scores]
    if missing:
        shown = ", ".join(repr(item_id) for item_id in missing[:3])
        raise InputError(path, None, f"no scores for {len(missing)} of the split's {len(items)} solutions ({shown}"
                                     f"{', ...' if len(missing) > 3 else ''}); give one line per solution: "
                                     f"{SCORES_LINE}")
    notes = [f"{path}: {unknown} lines for ids the split does not have, ignored"] if unknown else []
    return ScorerResult(scores=scores, scorer={"kind": "scores", "file": str(path)}, notes=notes)
