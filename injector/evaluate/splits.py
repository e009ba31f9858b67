"""The splits `inject eval` reads, as `EvalItem`s: an `inject build` split (its DatasetDict or its JSONL export),
PRMBench's own files, and ProcessBench files. A bad record is an `InputError` naming FILE:LINE (exit 2).

Ids: ours as the split gives them; PRMBench's `IDX::CLASSIFICATION` (its `idx` repeats across category files);
ProcessBench's `id`. Categories: ours; PRMBench's classifications mapped to our ids through the taxonomy;
a ProcessBench file's name (ProcessBench ships one file per subset: gsm8k, math, ...).
"""
from __future__ import annotations

import json
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from injector.util.errors import InputError, UserError
from injector.taxonomy import Taxonomy
from injector.evaluate.columns import ItemColumns, SeenIds
from injector.evaluate.metrics import CORRECT, ERROR, MULTI_SOLUTION, EvalItem
from injector.evaluate.protocols import PRMBENCH, STRICT, check_protocol
from injector.util.json_bounds import jsonl_lines
from injector.sources.labelled import detect_labelled_format as detect_split_format
from injector.model.split_row import SplitRow

CONTROL_CATEGORY = "correct"  # the category `inject build --include-sources` gives the source solutions
FORMATS = ("split", "prmbench", "processbench")


@dataclass
class LoadedSplit:
    """The items of a split and what reading them left out."""

    path: str
    items: list[EvalItem] | ItemColumns = field(default_factory=list)
    """As `EvalItem`s, or (read without texts: a scores file's metrics) as columns, a few bytes a solution."""
    formats: set[str] = field(default_factory=set)
    dropped_error_steps: int = 0
    """Error step numbers past the last step (PRMBench's files hold some), dropped."""
    excluded: list[str] = field(default_factory=list)
    """`FILE:LINE` of error items left with no error step once those were dropped (their label is unknown)."""
    protocol: str | None = None
    """strict or prmbench (docs/evaluation-protocols.md); None until the first record decides the default."""
    repeated: list[str] = field(default_factory=list)
    """prmbench: `FILE:LINE (id)` of records whose id came before, left out (PRMBench keeps the first)."""
    out_of_range_items: int = 0
    """prmbench: error solutions whose every error step is past the last step, scored as without error."""
    controls: int = 0
    """prmbench: `correct` controls built from the redundancy items' original solutions."""

    def warnings(self) -> list[str]:
        """What a reader of the figures must know about how the split was read."""
        notes = []
        if self.repeated:
            shown = ", ".join(self.repeated[:5]) + (", ..." if len(self.repeated) > 5 else "")
            notes.append(f"{len(self.repeated)} records repeat an earlier (classification, idx) and were left out, "
                         f"the first kept as PRMBench does: {shown}")
        if self.out_of_range_items:
            notes.append(f"{self.out_of_range_items} error solutions have every error step past their last step; "
                         "scored as solutions without error, as PRMBench's code does")
        return notes

    def describe(self) -> str:
        kinds = self.items.kind_counts() if isinstance(self.items, ItemColumns) else \
            {kind: sum(item.kind == kind for item in self.items) for kind in (ERROR, MULTI_SOLUTION, CORRECT)}
        text = (f"{self.path}: {len(self.items)} solutions ({kinds[ERROR]} with errors, {kinds[MULTI_SOLUTION]} "
                f"multi-solution, {kinds[CORRECT]} correct controls; {', '.join(sorted(self.formats))})")
        text += f"; protocol {self.protocol}"
        if self.controls:
            text += f"; {self.controls} correct controls built from the redundancy items' originals"
        if self.dropped_error_steps:
            text += f"; {self.dropped_error_steps} error step numbers past the last step " + (
                "never match" if self.protocol == PRMBENCH else "dropped")
        if self.excluded:
            text += f"; {len(self.excluded)} solutions left out, no error step left (first: {self.excluded[0]})"
        return text


class _Reader:
    """Turns records of one of the three formats into items, checking each field it reads."""

    def __init__(self, taxonomy: Taxonomy, loaded: LoadedSplit):
        self.loaded = loaded
        self.by_classification = {c.classification: c for c in taxonomy.categories}
        self.multi_solution = {c.id for c in taxonomy.categories if c.rules.multi_solution} | {MULTI_SOLUTION}
        # Columns number their items by this same set (`ItemColumns.index_of`): one digest an id, not two.
        self.seen = loaded.items.seen if isinstance(loaded.items, ItemColumns) else SeenIds()
        # Where each id was first read, to name it when it comes again: a source code and a line or row number
        # per id (8 bytes), not a `FILE:LINE` string (~100).
        self.sources: list[tuple[str, str]] = []
        self._source_codes: dict[tuple[str, str], int] = {}
        self.first_source, self.first_number = array("i"), array("q")

    def add(self, record: Any, fmt: str, location: tuple[str, int | None], sep: str = ":") -> None:
        """Read one record; `location` (FILE or split label, line or row number) and `sep` name it: FILE:LINE,
        LABEL row N."""
        if not isinstance(record, dict):
            raise InputError(*location, f"expected a JSON object, found {type(record).__name__}")
        if self.loaded.protocol is None:
            self.loaded.protocol = PRMBENCH if fmt == "prmbench" else STRICT
        item = {"split": self._split_row, "prmbench": self._prmbench, "processbench": self._processbench}[fmt](
            record, location, Path(location[0]).stem)
        self.loaded.formats.add(fmt)
        if item is None or not self._first(item.id, location, sep):
            return
        self.loaded.items.append(item)
        if fmt == "prmbench" and self.loaded.protocol == PRMBENCH and record.get("classification") == "redundency":
            self._control(record, item, location, sep)

    def _first(self, item_id: str, location: tuple[str, int | None], sep: str) -> bool:
        """Whether `item_id` is new; prmbench: a repeat is counted and left out, strict: refused."""
        first = self.seen.add(item_id)
        if first is None:
            source = (location[0], sep)
            code = self._source_codes.setdefault(source, len(self.sources))
            if code == len(self.sources):
                self.sources.append(source)
            self.first_source.append(code)
            self.first_number.append(-1 if location[1] is None else location[1])
            return True
        if self.loaded.protocol == PRMBENCH:
            self.loaded.repeated.append(f"{_where(location[0], sep, location[1])} ({item_id})")
            return False
        name, first_sep = self.sources[self.first_source[first]]
        number = self.first_number[first]
        raise InputError(*location, f"id {item_id!r} again (first at {_where(name, first_sep, number)}); ids must "
                                    "be unique")

    def _control(self, record: dict, item: EvalItem, location: tuple[str, int | None], sep: str) -> None:
        """PRMBench's `correct_<idx>` sample: the redundancy item's original solution, every step correct."""
        idx = item.id.split("::")[0]
        control_id = f"correct_{idx}::{CONTROL_CATEGORY}"
        steps = _steps(record, "original_process", location)
        if self._first(control_id, location, sep):
            control = EvalItem(id=control_id, category=CONTROL_CATEGORY, kind=CORRECT, steps=steps,
                               question=item.question, error_steps=NO_STEPS, first_error=None,
                               given_error_steps=NO_STEPS)
            self.loaded.items.append(control)
            self.loaded.controls += 1

    def _split_row(self, record: dict, location: tuple[str, int | None], stem: str) -> EvalItem | None:
        row = _split_row(record, location)
        kind = CORRECT if row.category == CONTROL_CATEGORY else MULTI_SOLUTION if row.category in self.multi_solution \
            else ERROR
        return self._labelled(row.id, row.category, kind, _Solution(tuple(row.modified_process), row.error_steps,
                                                                   row.modified_question or row.question), location)

    def _prmbench(self, record: dict, location: tuple[str, int | None], stem: str) -> EvalItem | None:
        classification = _text(record, "classification", location)
        idx = _text(record, "idx", location)
        known = self.by_classification.get(classification)
        category = known.id if known is not None else classification
        multi = (known is not None and known.rules.multi_solution) or classification == "multi_solutions"
        kind = MULTI_SOLUTION if multi else CORRECT if classification == CONTROL_CATEGORY else ERROR
        solution = _Solution(_steps(record, "modified_process", location), _error_steps(record, location),
                             str(record.get("modified_question") or record.get("question") or ""))
        return self._labelled(f"{idx}::{classification}", category, kind, solution, location)

    def _labelled(self, item_id: str, category: str, kind: str, solution: _Solution,
                  location: tuple[str, int | None]) -> EvalItem | None:
        steps, numbers = solution.steps, solution.error_steps
        kept = frozenset(n for n in numbers if 1 <= n <= len(steps))
        self.loaded.dropped_error_steps += len(set(numbers) - kept)
        if kind != ERROR:
            if kept:
                raise InputError(*location, f"a {kind.replace('_', '-')} solution with error steps {sorted(kept)}; "
                                            "its steps are all correct, so give `error_steps: []`")
            kept = NO_STEPS
        elif not kept and self.loaded.protocol == PRMBENCH:
            self.loaded.out_of_range_items += 1
        elif not kept:
            self.loaded.excluded.append(f"{location[0]}:{location[1]}")
            return None
        return EvalItem(id=item_id, category=category, kind=kind, steps=steps, question=solution.question,
                        error_steps=_shared(kept), first_error=min(kept) if kept else None,
                        given_error_steps=_shared(frozenset(numbers) if kind == ERROR else NO_STEPS))

    def _processbench(self, record: dict, location: tuple[str, int | None], stem: str) -> EvalItem:
        raw_id = record.get("id")
        if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool) or str(raw_id) == "":
            raise InputError(*location, "`id` must be a non-empty string")
        steps = _steps(record, "steps", location)
        label = record.get("label")
        if not isinstance(label, int) or isinstance(label, bool) or not -1 <= label < len(steps):
            raise InputError(*location, f"`label` must be the 0-based index of the first wrong step (0..{len(steps) - 1})"
                                        f" or -1 for none, found {label!r}")
        # ProcessBench files are 0-based with -1 for none; everything else here is 1-based.
        first_error = label + 1 if label >= 0 else None
        return EvalItem(id=str(raw_id), category=stem, kind=ERROR if first_error else CORRECT, steps=steps,
                        question=str(record.get("problem") or ""), error_steps=None, first_error=first_error)


def _where(name: str, sep: str, number: int | None) -> str:
    return f"{name}{sep}{'None' if number is None or number < 0 else number}"


_SHARED: dict[Any, Any] = {}
"""One object for equal step-number sets and blank step tuples (a handful of distinct ones, 100k items)."""


NO_STEPS: frozenset[int] = frozenset()
"""The one empty set of step numbers every item without error steps holds (each `frozenset()` is a new 216-byte
object: two per correct control, 27 MB at 100k solutions)."""


def _shared(value: Any) -> Any:
    """`value`, or the equal object an earlier item holds: ~400 bytes less a solution at scale."""
    return _SHARED.setdefault(value, value) if len(_SHARED) < 100_000 else value


@dataclass(frozen=True)
class _Solution:
    """What scoring needs of a labelled record: its steps, the error step numbers it gives, its question."""

    steps: tuple[str, ...]
    error_steps: list[int]
    question: str


def _split_row(record: dict, location: tuple[str, int | None]) -> SplitRow:
    """An `inject build` row as a `SplitRow`: the fields scoring needs checked first (their messages say what is
    expected), then the rest of the model (other columns are left out)."""
    _text(record, "id", location)
    _text(record, "category", location)
    _steps(record, "modified_process", location)
    _error_steps(record, location)
    try:
        return SplitRow.from_record(record)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise InputError(*location, f"`{where}`: {first['msg']} (an `inject build` row)") from None


def _error_steps(record: dict, location: tuple[str, int | None]) -> list[int]:
    numbers = record.get("error_steps")
    if not isinstance(numbers, list) or not all(isinstance(n, int) and not isinstance(n, bool) for n in numbers):
        raise InputError(*location, "`error_steps` must be a list of step numbers (1-based integers)")
    return numbers


def _text(record: dict, key: str, location: tuple[str, int | None]) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(*location, f"`{key}` must be a non-empty string, found {json.dumps(value)[:60]}")
    return value


def _steps(record: dict, key: str, location: tuple[str, int | None]) -> tuple[str, ...]:
    steps = record.get(key)
    if not isinstance(steps, list) or not steps or not all(isinstance(step, str) for step in steps):
        raise InputError(*location, f"`{key}` must be a non-empty list of step texts")
    return tuple(steps)


def _read_jsonl(path: Path, reader: _Reader) -> None:
    fmt = None
    for number, record in jsonl_lines(path):
        if fmt is None:
            fmt = detect_split_format(record)
            if fmt is None:
                raise InputError(path, number, "not a split record: expected an `inject build` row (id, category, "
                                               "modified_process, error_steps), a PRMBench record (idx, "
                                               "classification, modified_process, error_steps) or a ProcessBench "
                                               "one (id, steps, label)")
        reader.add(record, fmt, (str(path), number))


def _read_dataset(path: Path, split: str | None, reader: _Reader) -> None:
    import datasets

    datasets.disable_progress_bars()
    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as exc:  # noqa: BLE001 - datasets raises many kinds; its message reaches the user (exit 2)
        raise UserError(f"{path}: not a readable `inject build` split ({exc})") from None
    parts = dict(loaded.items()) if isinstance(loaded, datasets.DatasetDict) else {"": loaded}
    if split is not None:
        if split not in parts:
            raise UserError(f"{path}: no split {split!r}; it has {', '.join(sorted(parts))}")
        parts = {split: parts[split]}
    for name, dataset in parts.items():
        missing = {"id", "category", "modified_process", "error_steps"} - set(dataset.column_names)
        if missing:
            raise UserError(f"{path}: split {name!r} lacks the columns {sorted(missing)}; is it an `inject build` "
                            "split?")
        label = f"{path}[{name}]" if name else str(path)
        for number, row in enumerate(dataset, 1):
            reader.add(row, "split", (label, number), " row ")


def _refuse_run_directory(path: Path) -> None:
    """A run directory (or a file of one) is not a split: say so, and how to make one, before reading a line."""
    run_dir = path if path.is_dir() else path.parent
    if (run_dir / "manifest.json").is_file() and (run_dir / "candidates.jsonl").exists():
        raise UserError(f"{path}: this is a run directory (`inject run` writes it), not a split: build a split first "
                        f"(inject build {run_dir} --out splits/NAME --include-unreviewed --include-sources), then evaluate splits/NAME")


def load_split(path: str | Path, *, split: str | None = None, taxonomy: Taxonomy | None = None,
               protocol: str | None = None, texts: bool = True) -> LoadedSplit:
    """Every solution of `path`: an `inject build` directory (its DatasetDict; `split` picks one of its splits,
    default all), a JSONL file (one of the three formats, detected from its first record), or a directory of JSONL
    files (PRMBench's data directory, a split's `prmbench/` or `processbench/` export). `protocol` (strict or
    prmbench) defaults to prmbench for PRMBench's files and strict for everything else. Without `texts`, the items
    are `ItemColumns` (their steps blank, their question empty)."""
    path = Path(path)
    taxonomy = taxonomy or Taxonomy.load()
    loaded = LoadedSplit(path=str(path), protocol=None if protocol is None else check_protocol(protocol))
    if not texts:  # the scores file's path: its metrics read no text, and columns hold a solution in ~60 bytes
        loaded.items = ItemColumns()
    reader = _Reader(taxonomy, loaded)
    _refuse_run_directory(path)
    if path.is_dir() and any((path / name).is_file() for name in ("dataset_dict.json", "dataset_info.json")):
        _read_dataset(path, split, reader)
    elif path.is_dir():
        files = sorted(path.glob("*.jsonl"))
        if not files:
            raise UserError(f"{path}: neither an `inject build` split nor a directory of JSONL files")
        for file in files:
            _read_jsonl(file, reader)
    elif path.is_file():
        _read_jsonl(path, reader)
    else:
        raise UserError(f"{path}: no such file or directory")
    if split is not None and "split" not in loaded.formats:
        raise UserError(f"`split_name={split}`: only an `inject build` directory has named splits")
    if not loaded.items:
        raise UserError(f"{path}: no solutions to evaluate")
    return loaded
