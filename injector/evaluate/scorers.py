"""Step scores for `inject eval`: from a scores file a PRM wrote (here), an LLM judge (`judge.py`) or a PRM that vLLM
serves (`prm_server.py`). Each gives, per item id, one score in 0..1 per step, or None for an answer that could not
be read (a judge's)."""
from __future__ import annotations

import json
import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from injector.util.errors import InputError, UserError
from injector.evaluate.metrics import CORRECT, EvalItem
from injector.evaluate.protocols import PRMBENCH, STRICT
from injector.util.json_bounds import JsonRefused, loads_bounded

SCORES_LINE = '{"id": "...", "step_scores": [0.93, 0.12, ...]}'


@dataclass
class ScorerResult:
    """What a scorer returns: scores per item id (None: an invalid answer), and what the report says of it."""

    scores: dict[str, Sequence[float] | None]
    scorer: dict[str, Any]
    """kind (scores, judge, prm_server) and its settings: file, model, server host."""
    validity: float | None = None
    """Share of items with a valid answer (a judge's); None for scorers that always give scores."""
    cost: float | None = None
    notes: list[str] = field(default_factory=list)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per item id, what goes into its predictions line beyond the scores (a judge's attempts and problem)."""
    redundancy_scores: dict[str, Sequence[float] | None] = field(default_factory=dict)
    """Per item id, the scores that replace `scores` for the two redundancy categories (PRMBench's judges and
    ReasonEval give them)."""
    longer_lists: int = 0
    """prmbench protocol: score lists one longer than the steps, consumed whole as PRMBench does."""


def check_step_scores(value: Any, n_steps: int, *, key: str = "step_scores", one_more: bool = False) -> str | None:
    """Why `value` is not `n_steps` scores in 0..1 (`one_more`: or one more, as PRMBench consumes them), or None
    when it is."""
    if not isinstance(value, list):
        return f"`{key}` must be a list of numbers"
    if len(value) != n_steps and not (one_more and len(value) == n_steps + 1):
        return (f"{len(value)} {key.replace('_', ' ')} for a solution of {n_steps} steps; give one score per step"
                + (" (the prmbench protocol also takes one more)" if one_more else ""))
    for k, score in enumerate(value, 1):
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            return f"step {k}: score {json.dumps(score)} is not a number"
        if not math.isfinite(score):
            return f"step {k}: score {score} is not a finite number"
        if not 0 <= score <= 1:
            return f"step {k}: score {score} is outside 0..1; give probabilities (e.g. apply a sigmoid first)"
    return None


def _score_line(record: dict, item: EvalItem, path: Path, number: int, result: ScorerResult, protocol: str) -> None:
    """Check one line's `step_scores` (and `redundancy_scores`, when given) and put them into `result`."""
    one_more = protocol == PRMBENCH
    for key, into in (("step_scores", result.scores), ("redundancy_scores", result.redundancy_scores)):
        if key == "redundancy_scores" and record.get(key) is None:
            continue
        problem = check_step_scores(record.get(key), len(item.steps), key=key, one_more=one_more)
        if problem:
            raise InputError(path, number, f"id {item.id!r}: {problem}")
        # 8 bytes a score, not a float object (24) and a pointer (8): ~0.35 KB less a solution at scale
        into[item.id] = array("d", record[key])
    if len(record["step_scores"]) > len(item.steps):
        result.longer_lists += 1


def _records(path: Path) -> Any:
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
                yield number, record
        except UnicodeDecodeError:
            raise UserError(f"{path}: not UTF-8 text") from None


def read_scores(path: str | Path, items: Sequence[EvalItem], protocol: str = STRICT) -> ScorerResult:
    """Scores from a JSONL file of `{"id", "step_scores"}` (and optionally `redundancy_scores`): every item of the
    split must have one line with one score in 0..1 per step; ids the split lacks are ignored (said in a note).
    prmbench protocol: a repeated id keeps its first line (counted), lists may be one longer than the steps, and
    the correct controls may be missing altogether (then left out, said in a note). Errors name FILE:LINE (exit 2)."""
    path = Path(path)
    by_id = {item.id: item for item in items}
    result = ScorerResult(scores={}, scorer={"kind": "scores", "file": str(path)})
    lines: dict[str, int] = {}
    unknown = repeated = 0
    for number, record in _records(path):
        item_id = record["id"]
        if item_id in lines:
            if protocol != PRMBENCH:
                raise InputError(path, number, f"id {item_id!r} again (first on line {lines[item_id]})")
            repeated += 1
            continue
        lines[item_id] = number
        item = by_id.get(item_id)
        if item is None:
            unknown += 1
            continue
        _score_line(record, item, path, number, result, protocol)
    _check_missing(path, items, result, protocol)
    if unknown:
        result.notes.append(f"{path}: {unknown} lines for ids the split does not have, ignored")
    if repeated:
        result.notes.append(f"{path}: {repeated} lines repeat an earlier id; the first of each kept")
    if result.longer_lists:
        result.notes.append(f"{result.longer_lists} score lists one longer than their steps; the extra label is "
                            "scored as a correct step, as PRMBench's code does")
    return result


def _check_missing(path: Path, items: Sequence[EvalItem], result: ScorerResult, protocol: str) -> None:
    missing = [item for item in items if item.id not in result.scores]
    controls = [item for item in items if item.kind == CORRECT]
    # By id, not `item in missing`: a scan of the list per control was quadratic (hours at 100k controls).
    if protocol == PRMBENCH and controls and all(item.id not in result.scores for item in controls):
        missing = [item for item in missing if item.kind != CORRECT]
        result.notes.append(f"no scores for the {len(controls)} correct controls (ids correct_IDX::correct): left "
                            "out, so the table has no correct column")
    if missing:
        shown = ", ".join(repr(item.id) for item in missing[:3])
        raise InputError(path, None, f"no scores for {len(missing)} of the split's {len(items)} solutions ({shown}"
                                     f"{', ...' if len(missing) > 3 else ''}); give one line per solution: "
                                     f"{SCORES_LINE}")
