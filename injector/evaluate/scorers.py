"""Step scores for `inject eval`: from a scores file a PRM wrote (here), an LLM judge (`judge.py`) or a PRM that vLLM
serves (`prm_server.py`). Each gives, per item id, one score in 0..1 per step, or None for an answer that could not
be read (a judge's)."""
from __future__ import annotations

import json
import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence, cast

from injector.util.errors import InputError, UserError
from injector.evaluate.columns import ItemColumns, ScoreColumns, SeenIds
from injector.evaluate.metrics import CORRECT, EvalItem
from injector.evaluate.protocols import PRMBENCH, STRICT
from injector.util.json_bounds import JsonRefused, loads_bounded

SCORES_LINE = '{"id": "...", "step_scores": [0.93, 0.12, ...]}'


@dataclass
class ScorerResult:
    """What a scorer returns: scores per item id (None: an invalid answer), and what the report says of it."""

    scores: Mapping[str, Sequence[float] | None]
    """A dict, or (a scores file read for `ItemColumns`) `ScoreColumns`."""
    scorer: dict[str, Any]
    """kind (scores, judge, prm_server) and its settings: file, model, server host."""
    validity: float | None = None
    """Share of items with a valid answer (a judge's); None for scorers that always give scores."""
    cost: float | None = None
    notes: list[str] = field(default_factory=list)
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per item id, what goes into its predictions line beyond the scores (a judge's attempts and problem)."""
    redundancy_scores: Mapping[str, Sequence[float] | None] = field(default_factory=dict)
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


class _Sink:
    """Where `read_scores` puts what it reads: a dict of score arrays per id for a list of items, where each line
    starts for `ItemColumns` (`ScoreColumns`: the scores stay in the file)."""

    def __init__(self, path: Path, items: Sequence[EvalItem]) -> None:
        self.items = items
        self.columns = items if isinstance(items, ItemColumns) else None
        if self.columns is not None:
            self.scores: Mapping[str, Sequence[float] | None] = ScoreColumns(path, self.columns, "step_scores")
            self.redundancy: Mapping[str, Sequence[float] | None] = ScoreColumns(path, self.columns,
                                                                                 "redundancy_scores")
        else:
            self.by_id = {item.id: index for index, item in enumerate(items)}
            self.scores, self.redundancy = {}, {}

    def index_of(self, item_id: str) -> int | None:
        return self.columns.index_of(item_id) if self.columns is not None else self.by_id.get(item_id)

    def n_steps(self, index: int) -> int:
        return self.columns.n_steps[index] if self.columns is not None else len(self.items[index].steps)

    def id_kind(self, index: int) -> tuple[str, str]:
        if self.columns is not None:
            return self.columns.id_of(index), self.columns.kind_of(index)
        return self.items[index].id, self.items[index].kind

    def scored(self, index: int) -> bool:
        if isinstance(self.scores, ScoreColumns):
            return self.scores.has(index)
        return self.items[index].id in self.scores

    def put(self, index: int, key: str, start: int, values: list) -> None:
        into = self.scores if key == "step_scores" else self.redundancy
        if isinstance(into, ScoreColumns):
            into.put(index, start)
        else:  # 8 bytes a score, not a float object (24) and a pointer (8): ~0.35 KB less a solution at scale
            cast(dict, into)[self.items[index].id] = array("d", values)


def _score_line(record: dict, sink: _Sink, index: int, where: tuple[Path, int, int], result: ScorerResult,
                protocol: str) -> None:
    """Check one line's `step_scores` (and `redundancy_scores`, when given) and put them into `sink`."""
    path, number, start = where
    n_steps = sink.n_steps(index)
    for key in ("step_scores", "redundancy_scores"):
        if key == "redundancy_scores" and record.get(key) is None:
            continue
        problem = check_step_scores(record.get(key), n_steps, key=key, one_more=protocol == PRMBENCH)
        if problem:
            raise InputError(path, number, f"id {record['id']!r}: {problem}")
        sink.put(index, key, start, record[key])
    if len(record["step_scores"]) > n_steps:
        result.longer_lists += 1


def _records(path: Path) -> Iterator[tuple[int, int, dict]]:
    """(line number, where the line starts, record) per non-blank line."""
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise UserError(f"{path}: cannot read the scores file ({exc.strerror or exc})") from None
    with handle:
        start = 0
        for number, raw in enumerate(handle, 1):
            line_start, start = start, start + len(raw)
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise UserError(f"{path}: not UTF-8 text") from None
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
            yield number, line_start, record


def _first_line(path: Path, item_id: str) -> int:
    """The number of the first line with `item_id` (read again: asked only when an id comes twice)."""
    return next(number for number, _, record in _records(path) if record["id"] == item_id)


def read_scores(path: str | Path, items: Sequence[EvalItem], protocol: str = STRICT) -> ScorerResult:
    """Scores from a JSONL file of `{"id", "step_scores"}` (and optionally `redundancy_scores`): every item of the
    split must have one line with one score in 0..1 per step; ids the split lacks are ignored (said in a note).
    prmbench protocol: a repeated id keeps its first line (counted), lists may be one longer than the steps, and
    the correct controls may be missing altogether (then left out, said in a note). Errors name FILE:LINE (exit 2).
    For `ItemColumns` the scores are `ScoreColumns`, read from the file again when asked for; a regular file
    only (a pipe is read once)."""
    path = Path(path)
    if isinstance(items, ItemColumns) and not path.is_file():
        items = list(items)
    sink = _Sink(path, items)
    result = ScorerResult(scores=sink.scores, scorer={"kind": "scores", "file": str(path)},
                          redundancy_scores=sink.redundancy)
    unknown_ids, unknown_lines = SeenIds(), array("q")
    unknown = repeated = 0
    for number, start, record in _records(path):
        item_id = record["id"]
        index = sink.index_of(item_id)
        first_line: int | None = None
        if index is None:
            earlier = unknown_ids.add(item_id)
            if earlier is None:
                unknown_lines.append(number)
                unknown += 1
                continue
            first_line = unknown_lines[earlier]
        elif not sink.scored(index):
            _score_line(record, sink, index, (path, number, start), result, protocol)
            continue
        if protocol != PRMBENCH:
            raise InputError(path, number, f"id {item_id!r} again (first on line "
                                           f"{first_line or _first_line(path, item_id)})")
        repeated += 1
    _check_missing(path, sink, result, protocol)
    if unknown:
        result.notes.append(f"{path}: {unknown} lines for ids the split does not have, ignored")
    if repeated:
        result.notes.append(f"{path}: {repeated} lines repeat an earlier id; the first of each kept")
    if result.longer_lists:
        result.notes.append(f"{result.longer_lists} score lists one longer than their steps; the extra label is "
                            "scored as a correct step, as PRMBench's code does")
    return result


def _check_missing(path: Path, sink: _Sink, result: ScorerResult, protocol: str) -> None:
    """Refuse a split with solutions the file does not score (prmbench: but for every correct control at once,
    left out with a note). Counted by id as the items come, never a list of them (a scan of one per control was
    quadratic: hours at 100k controls)."""
    missing, missing_errors = Missing(), Missing()
    controls = scored_controls = 0
    for index in range(len(sink.items)):
        item_id, kind = sink.id_kind(index)
        scored = sink.scored(index)
        controls += kind == CORRECT
        scored_controls += kind == CORRECT and scored
        if not scored:
            missing.add(item_id)
            if kind != CORRECT:
                missing_errors.add(item_id)
    if protocol == PRMBENCH and controls and not scored_controls:
        missing = missing_errors
        result.notes.append(f"no scores for the {controls} correct controls (ids correct_IDX::correct): left "
                            "out, so the table has no correct column")
    if missing.count:
        shown = ", ".join(repr(item_id) for item_id in missing.first)
        raise InputError(path, None, f"no scores for {missing.count} of the split's {len(sink.items)} solutions "
                                     f"({shown}{', ...' if missing.count > 3 else ''}); give one line per "
                                     f"solution: {SCORES_LINE}")


@dataclass
class Missing:
    """How many ids lack scores, and the first three."""

    count: int = 0
    first: list[str] = field(default_factory=list)

    def add(self, item_id: str) -> None:
        self.count += 1
        if len(self.first) < 3:
            self.first.append(item_id)
