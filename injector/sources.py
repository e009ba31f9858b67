"""Loaders that stream PRM800K, PRMBench, our own JSONL and Hugging Face datasets as `Trajectory` objects.

Records are read one at a time; the only state that grows with the input is one small digest per yielded
trajectory, kept to drop duplicates.
"""
from __future__ import annotations

import gzip
import hashlib
import json
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from pydantic import ValidationError

from .answers import answers_equivalent, extract_final_answer
from .errors import InputError, UserError
from .resources import bundled_data_path
from .trajectory import Trajectory

RECORD_FORMATS = ("prm800k", "trajectories", "prmbench")
_TRAJECTORY_FIELDS = tuple(Trajectory.model_fields)
_FORMAT_HINT = "use --input-format to choose another format"
_PRM800K_NEEDS = ("PRM800K records need question.problem, question.ground_truth_answer, label.steps and "
                  "label.finish_reason")
_PRMBENCH_NEEDS = "PRMBench records need original_question and original_process"
_MISSING = object()

# One raw record as a stream yields it: (path for messages, stem for ids, 1-based line, record, parse problem).
RawRecord = tuple[str, str, int, Any, "str | None"]


@dataclass
class SourceStats:
    read: int = 0
    """Records (non-blank lines or rows) read."""
    selected: int = 0
    """Trajectories yielded."""
    invalid: int = 0
    """Malformed records skipped under `skip_invalid`."""
    skipped: Counter[str] = field(default_factory=Counter)
    """Reason -> count for records that are valid but not selected."""

    def as_dict(self) -> dict:
        return {"read": self.read, "selected": self.selected, "invalid": self.invalid,
                "skipped": dict(self.skipped)}


class _BadRecord(Exception):
    """A malformed record; the stream turns it into `InputError(path, line, message)`."""


class TrajectorySource:
    """Iterable of Trajectory; iterate once. After (or during) iteration `stats` holds the counts."""

    def __init__(self, path: str, format: str, format_detected: bool, records: Callable[[], Iterator[RawRecord]],
                 read_record: Callable[[Any, str], "Trajectory | str"], skip_invalid: bool):
        self.path, self.format, self.format_detected = path, format, format_detected
        self.stats = SourceStats()
        self._records, self._read_record, self._skip_invalid = records, read_record, skip_invalid
        self._started = False
        self.options: dict[str, Any] = {}
        """The loader options that change what is selected (part of a run's configuration)."""

    def estimated_count(self) -> int | None:
        """Records in the input, counted cheaply by lines (an upper bound on trajectories); None when unknown."""
        path = Path(self.path)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in (".jsonl", ".json"))
        else:
            files = [path] if path.is_file() and path.suffix in (".jsonl", ".json") else []
        if not files:
            return None
        total = 0
        for file in files:
            with file.open("rb") as handle:
                total += sum(chunk.count(b"\n") for chunk in iter(lambda: handle.read(1 << 20), b""))
        return total

    def identity(self) -> dict[str, Any]:
        """What identifies this input in a run configuration: a rerun on the same input continues the run."""
        path = self.path if self.path.startswith("hf:") else str(Path(self.path).resolve())
        return {"input": path, "format": self.format, **self.options}

    def __iter__(self) -> Iterator[Trajectory]:
        # Checked here, not inside the generator, so a second `iter()` fails at once.
        if self._started:
            raise RuntimeError("a TrajectorySource can be iterated once; call load_trajectories again")
        self._started = True
        return self._generate()

    def _generate(self) -> Iterator[Trajectory]:
        seen: set[bytes] = set()
        for where, stem, line, record, problem in self._records():
            self.stats.read += 1
            try:
                if problem is not None:
                    raise _BadRecord(problem)
                result = self._read_record(record, f"{stem}:{line}")
            except _BadRecord as bad:
                if not self._skip_invalid:
                    raise InputError(where, line, str(bad)) from None
                self.stats.invalid += 1
                continue
            if isinstance(result, str):
                self.stats.skipped[result] += 1
                continue
            digest = hashlib.blake2b(json.dumps([result.question, result.steps]).encode(), digest_size=16).digest()
            if digest in seen:
                self.stats.skipped["duplicate"] += 1
                continue
            seen.add(digest)
            self.stats.selected += 1
            yield result

    def describe(self) -> str:
        """One line, e.g. `data/sample.jsonl: prm800k (detected); read 30, selected 30, skipped 0`."""
        stats = self.stats
        how = "detected" if self.format_detected else "given"
        text = f"{self.path}: {self.format} ({how}); read {stats.read}, selected {stats.selected}"
        text += f", skipped {sum(stats.skipped.values())}"
        if stats.skipped:
            text += " (" + ", ".join(f"{reason} {n}" for reason, n in stats.skipped.most_common()) + ")"
        if stats.invalid:
            text += f", invalid {stats.invalid}"
        return text


def detect_format(record: dict) -> str | None:
    """The record format a raw record looks like, or None."""
    if not isinstance(record, dict):
        return None
    label, question = record.get("label"), record.get("question")
    if isinstance(label, dict) and "steps" in label and isinstance(question, dict) and "problem" in question:
        return "prm800k"
    if "original_process" in record:
        return "prmbench"
    if "steps" in record and "question" in record:
        return "trajectories"
    return None


def load_trajectories(source: str | Path | None = None, format: str | None = None, *, strict: bool = False,
                      skip_invalid: bool = False, fields: dict[str, str] | None = None,
                      split: str | None = None) -> TrajectorySource:
    """Open `source` (a JSONL file, a directory, or `hf:NAME[:SPLIT]`; default: the bundled sample).

    `strict` applies to PRM800K (every chosen step rated 1); `fields` maps `{TARGET: SOURCE}` (dotted SOURCE)
    and implies the `trajectories` format; `skip_invalid` counts malformed records instead of raising.
    """
    if format is not None and format not in RECORD_FORMATS:
        raise UserError(f"unknown input format {format!r}; choose one of: {', '.join(RECORD_FORMATS)}")
    if fields:
        _check_fields(fields)
        if format not in (None, "trajectories"):
            raise UserError(f"--field maps records onto the trajectories format; it cannot be used with {format!r}")
        format = "trajectories"
    label, records = _open(source, split)
    detected = format is None
    if format is None:
        format = _detect(label, records, skip_invalid)
    if format == "prm800k":
        read_record: Callable[[Any, str], Trajectory | str] = lambda r, origin: _read_prm800k(r, origin, strict)
    elif format == "prmbench":
        read_record = _read_prmbench
    else:
        read_record = lambda r, origin: _read_trajectory(r, origin, fields)
    source = TrajectorySource(label, format, detected, records, read_record, skip_invalid)
    source.options = {"strict": strict, "fields": fields or {}, "split": split}
    return source


def _detect(label: str, records: Callable[[], Iterator[RawRecord]], skip_invalid: bool) -> str:
    """The format of the first record (the first parseable one under `skip_invalid`)."""
    with closing(records()) as stream:
        for where, _stem, line, record, problem in stream:
            if problem is not None:
                if skip_invalid:
                    continue
                raise InputError(where, line, problem)
            found = detect_format(record)
            if found is None:
                keys = ", ".join(sorted(record)) or "none"
                raise InputError(where, line, f"cannot tell the record format (keys: {keys}); known formats: "
                                 f"{', '.join(RECORD_FORMATS)}; choose one with --input-format, or map fields "
                                 "with --field TARGET=SOURCE")
            return found
    raise UserError(f"{label}: no records to read, so the format cannot be detected; the input is empty")


# ---- where records come from -------------------------------------------------------------------------------

def _open(source: str | Path | None, split: str | None) -> tuple[str, Callable[[], Iterator[RawRecord]]]:
    if source is None:
        try:
            source = bundled_data_path()
        except FileNotFoundError as exc:
            raise UserError(str(exc)) from None
    text = str(source)
    if text.startswith("hf:"):
        return _open_hub(text[3:], split)
    path = Path(source)
    if not path.exists():
        raise UserError(f"no such file: {path}")
    if path.is_dir():
        if any((path / name).is_file() for name in ("dataset_info.json", "state.json", "dataset_dict.json")):
            return _open_saved(path, split)
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith((".jsonl", ".json", ".jsonl.gz")))
        if not files:
            raise UserError(f"{path}: no .jsonl files in this directory, and it is not a Hugging Face "
                            "save_to_disk directory")
        return text, lambda: (raw for file in files for raw in _jsonl_records(file))
    if split is not None:
        raise UserError(f"{path} is a file; a split applies only to Hugging Face datasets")
    return text, lambda: _jsonl_records(path)


def _jsonl_records(path: Path) -> Iterator[RawRecord]:
    """Stream a JSONL file (gzip when it ends in .gz), decoding line by line so one bad line stays one."""
    where, stem = str(path), path.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".json")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        for line_no, raw in enumerate(handle, 1):
            try:
                text = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError:
                yield where, stem, line_no, None, "not UTF-8 text; save the file as UTF-8"
                continue
            if not text.strip():
                continue
            try:
                record = json.loads(text)
            except json.JSONDecodeError as exc:
                hint = ("; this looks like a JSON array, but each line must hold one JSON object (JSONL)"
                        if text.strip() == "[" else "; each line must hold one complete JSON object")
                yield where, stem, line_no, None, f"malformed JSON: {exc.msg} at column {exc.colno}{hint}"
                continue
            if not isinstance(record, dict):
                yield where, stem, line_no, None, f"expected a JSON object, found {type(record).__name__}"
                continue
            yield where, stem, line_no, record, None


def _datasets() -> Any:
    import datasets  # lazy: slow to import, and needed only for Hugging Face inputs

    return datasets


def _open_saved(path: Path, split: str | None) -> tuple[str, Callable[[], Iterator[RawRecord]]]:
    try:
        data = _datasets().load_from_disk(str(path))
    except Exception as exc:  # datasets raises many types; the user needs the message, not a traceback
        raise UserError(f"{path}: cannot load this Hugging Face dataset directory: {exc}") from None
    return _rows(str(path), path.name, data, split)


def _open_hub(spec: str, split: str | None) -> tuple[str, Callable[[], Iterator[RawRecord]]]:
    name, _, named_split = spec.partition(":")
    if not name:
        raise UserError("hf: needs a dataset name, e.g. hf:openai/gsm8k:train")
    if named_split and split and named_split != split:
        raise UserError(f"hf:{spec} names split {named_split!r} but split {split!r} was also given")
    try:
        data = _datasets().load_dataset(name)
    except Exception as exc:
        raise UserError(f"cannot load Hugging Face dataset {name!r}: {type(exc).__name__}: {exc}. Without "
                        "network access it must already be in the local Hugging Face cache; or save it with "
                        "Dataset.save_to_disk and pass that directory") from None
    return _rows(f"hf:{name}", name.rsplit("/", 1)[-1], data, named_split or split)


def _rows(label: str, stem: str, data: Any, split: str | None) -> tuple[str, Callable[[], Iterator[RawRecord]]]:
    """Pick the split of a DatasetDict and stream its rows as dicts."""
    if hasattr(data, "keys"):  # a DatasetDict
        splits = list(data.keys())
        if split is None and len(splits) == 1:
            split = splits[0]
        if split is None or split not in splits:
            what = "choose a split" if split is None else f"no split {split!r}"
            raise UserError(f"{label}: {what}; available splits: {', '.join(splits)} (e.g. {label}:{splits[0]} "
                            "for hf: names, or the split option)")
        data, label, stem = data[split], f"{label}:{split}", f"{stem}_{split}"
    elif split is not None:
        raise UserError(f"{label} is a single dataset without splits; drop the split {split!r}")
    return label, lambda: ((label, stem, row_no, row, None) for row_no, row in enumerate(data, 1))


# ---- record formats -----------------------------------------------------------------------------------------

def _lookup(record: Any, dotted: str) -> Any:
    """`record["a"]["b"]` for "a.b" (a number indexes a list), or `_MISSING`."""
    value = record
    for part in dotted.split("."):
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return _MISSING
    return value


def _required(record: dict, dotted: str, kinds: tuple[type, ...], needs: str) -> Any:
    value = _lookup(record, dotted)
    if value is _MISSING:
        raise _BadRecord(f"missing field '{dotted}' ({needs}); {_FORMAT_HINT}")
    if not isinstance(value, kinds):
        wanted = " or ".join("null" if kind is type(None) else kind.__name__ for kind in kinds)
        raise _BadRecord(f"field '{dotted}' must be {wanted}, not {type(value).__name__}")
    return value


def _read_prm800k(record: dict, origin: str, strict: bool) -> Trajectory | str:
    """A fully correct PRM800K solution as a Trajectory, else the reason it is skipped."""
    problem = _required(record, "question.problem", (str,), _PRM800K_NEEDS)
    truth = _required(record, "question.ground_truth_answer", (str, type(None)), _PRM800K_NEEDS)
    steps = _required(record, "label.steps", (list,), _PRM800K_NEEDS)
    finish = _required(record, "label.finish_reason", (str, type(None)), _PRM800K_NEEDS)
    if record.get("is_quality_control_question"):
        return "quality_control"
    if record.get("is_initial_screening_question"):
        return "screening"
    if finish != "solution":
        return "not_solved"
    if not steps:
        raise _BadRecord("label.steps is empty although label.finish_reason is 'solution'")
    texts, ratings = [], []  # ratings of chosen completions only: a human completion counts as correct
    for index, step in enumerate(steps):
        text, rating, chosen = _prm800k_step(step, index)
        texts.append(text)
        if chosen:
            ratings.append(rating)
    if any(text is None for text in texts):
        return "missing_step"
    if -1 in ratings:
        return "rated_wrong"
    if strict and any(rating != 1 for rating in ratings):
        return "not_rated_correct"
    if not answers_equivalent(extract_final_answer(texts[-1]), truth):
        return "answer_mismatch"
    trajectory_id = f"prm800k:{origin}"
    return Trajectory(id=trajectory_id, question=problem, steps=texts, answer=truth,
                      meta={"idx": trajectory_id, "source_format": "prm800k"})


def _prm800k_step(step: Any, index: int) -> tuple[str | None, Any, bool]:
    """(text, rating, whether a chosen completion gave it) of one label step; text None when it has neither."""
    where = f"label.steps[{index}]"
    if not isinstance(step, dict):
        raise _BadRecord(f"{where} must be an object, not {type(step).__name__}")
    completions, chosen = step.get("completions") or [], step.get("chosen_completion")
    human = step.get("human_completion")
    if not isinstance(completions, list):
        raise _BadRecord(f"{where}.completions must be a list")
    if chosen is not None:
        if not isinstance(chosen, int) or isinstance(chosen, bool) or not 0 <= chosen < len(completions):
            raise _BadRecord(f"{where}.chosen_completion is {chosen!r}, not an index into its "
                             f"{len(completions)} completions")
        completion = completions[chosen]
        if not isinstance(completion, dict) or not isinstance(completion.get("text"), str):
            raise _BadRecord(f"{where}.completions[{chosen}] needs a text string")
        return completion["text"], completion.get("rating"), True
    if human is not None:
        if not isinstance(human, dict) or not isinstance(human.get("text"), str):
            raise _BadRecord(f"{where}.human_completion needs a text string")
        return human["text"], None, False
    return None, None, False


def _read_prmbench(record: dict, origin: str) -> Trajectory:
    """The original (correct) solution of a PRMBench record, its text kept verbatim."""
    question = _required(record, "original_question", (str,), _PRMBENCH_NEEDS)
    steps = _required(record, "original_process", (list,), _PRMBENCH_NEEDS)
    if not steps:
        raise _BadRecord("original_process is empty; a trajectory needs at least one step")
    for number, step in enumerate(steps, 1):
        if not isinstance(step, str):
            raise _BadRecord(f"original_process step {number} must be a string, not {type(step).__name__}")
    idx = record.get("idx")
    if idx is None:
        idx = origin
    # The same idx carries different echoed texts across category files, so the text goes into the id.
    text_hash = hashlib.sha256((question + "\n" + "\n".join(steps)).encode("utf-8")).hexdigest()[:8]
    meta: dict[str, Any] = {"idx": idx, "source_format": "prmbench"}
    for key in ("question", "classification"):
        if record.get(key) is not None:
            meta[key] = record[key]
    answer = record.get("ground_truth")
    if answer is not None and not isinstance(answer, (str, int, float)):
        raise _BadRecord(f"field 'ground_truth' must be a string, not {type(answer).__name__}")
    return Trajectory(id=f"{idx}-{text_hash}", question=question, steps=steps,
                      answer=None if answer is None else str(answer), meta=meta)


def _check_fields(fields: dict[str, str]) -> None:
    for target, source in fields.items():
        if target not in _TRAJECTORY_FIELDS:
            raise UserError(f"--field {target}={source}: unknown target {target!r}; targets are "
                            f"{', '.join(_TRAJECTORY_FIELDS)}")
        if not source:
            raise UserError(f"--field {target}=: name the source field, e.g. --field {target}=response.{target}")


def _read_trajectory(record: dict, origin: str, fields: dict[str, str] | None) -> Trajectory:
    """One of our own records, or a foreign one mapped through `fields` (its other keys are ignored)."""
    if fields:
        data = {key: value for key, value in record.items() if key in _TRAJECTORY_FIELDS and key not in fields}
        for target, source in fields.items():
            value = _lookup(record, source)
            if value is _MISSING:
                raise _BadRecord(f"missing field '{source}' (mapped to {target} by --field {target}={source})")
            data[target] = value
    else:
        data = dict(record)
    for key in ("id", "answer", "images", "meta"):  # Hugging Face rows fill absent columns with None
        if data.get(key, _MISSING) is None:
            del data[key]
    data.setdefault("id", origin)
    for key in ("id", "answer"):  # numeric ids and answers are common in foreign data
        if isinstance(data.get(key), (int, float)) and not isinstance(data.get(key), bool):
            data[key] = str(data[key])
    try:
        trajectory = Trajectory.model_validate(data)
    except ValidationError as exc:
        raise _BadRecord(_explain(exc, fields or {})) from None
    trajectory.meta.setdefault("idx", trajectory.id)
    return trajectory


def _explain(error: ValidationError, fields: dict[str, str]) -> str:
    """A pydantic error as what is wrong and how to fix it."""
    problems = []
    for item in error.errors():
        name = ".".join(str(part) for part in item["loc"])
        top = str(item["loc"][0]) if item["loc"] else ""
        mapped = f" (from '{fields[top]}')" if top in fields else ""
        if item["type"] == "extra_forbidden":
            problems.append(f"unknown field '{name}'; a trajectory has {', '.join(_TRAJECTORY_FIELDS)} (map other "
                            "names with --field TARGET=SOURCE, or use --input-format to choose another format)")
        elif item["type"] == "missing":
            problems.append(f"missing field '{name}' (trajectory records need question and steps; map other "
                            f"names with --field TARGET=SOURCE, or {_FORMAT_HINT})")
        else:
            problems.append(f"field '{name}'{mapped}: {item['msg'].removeprefix('Value error, ')}")
    return "; ".join(problems)
