"""Streams of raw records (JSONL files, gzipped or not, directories of them, Hugging Face datasets saved to disk or
in the Hub cache), read as `Trajectory` objects by one record format of the registry.

Records are read one at a time; the only state that grows with the input is one small digest and the id of each
yielded trajectory, kept to drop duplicates and to catch two different records sharing an id.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import zlib
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generator, Iterable, Iterator, Protocol, Sized, runtime_checkable

from injector.model.choices import DUPLICATE_ID_POLICIES  # defined there for --help
from injector.util.errors import InputError, UserError
from injector.util.json_bounds import JsonRefused, loads_bounded
from injector.sources.reading import BadRecord
from injector.sources.sniff import not_jsonl
from injector.sources.registry import ReadOptions, RecordFormat, detect_format, format_names, formats, get_format
from injector.util.resources import bundled_data_path
from injector.model.trajectory import Trajectory
from injector.records.unit_ids import Digests, text_digest

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


@runtime_checkable
class TrajectoryInput(Protocol):
    """What a run reads: trajectories, and what identifies and describes them. `TrajectorySource` (what
    `load_trajectories` returns) is one; `IterableInput` makes one of any iterable of `Trajectory`."""

    image_base: Path | None
    """The directory local images were checked to lie under (recorded in a run's manifest); None: none."""
    stats: SourceStats
    """Counts of what was read and selected (a run's manifest `source`), filled during iteration."""

    def __iter__(self) -> Iterator[Trajectory]: ...

    def identity(self) -> dict[str, Any]:
        """What identifies this input in a run configuration: a rerun on the same input continues the run."""
        ...

    def estimated_count(self) -> int | None:
        """An upper bound on the trajectories, known cheaply (progress and ETA); None when unknown."""
        ...


class IterableInput:
    """Trajectories from Python (a list, a generator) as a run's input; `identity` names them in the run's
    configuration (default `{"input": "python"}`: give each input its own, or runs of two inputs collide)."""

    def __init__(self, trajectories: Iterable[Trajectory], identity: dict[str, Any] | None = None):
        self._trajectories = trajectories
        self._identity = identity if identity is not None else {"input": "python"}
        self.image_base: Path | None = None
        self.stats = SourceStats()

    def __iter__(self) -> Iterator[Trajectory]:
        for trajectory in self._trajectories:
            self.stats.read += 1
            self.stats.selected += 1
            yield trajectory

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def estimated_count(self) -> int | None:
        return len(self._trajectories) if isinstance(self._trajectories, Sized) else None


def as_input(trajectories: Iterable[Trajectory]) -> TrajectoryInput:
    """`trajectories` itself when it is a `TrajectoryInput`, else an `IterableInput` of it."""
    return trajectories if isinstance(trajectories, TrajectoryInput) else IterableInput(trajectories)


class TrajectorySource:
    """Iterable of Trajectory; iterate once. After (or during) iteration `stats` holds the counts."""

    def __init__(self, path: str, format: str, format_detected: bool, records: Callable[[], Generator[RawRecord, None, None]],
                 read_record: Callable[[Any, str, str], "Trajectory | str"], skip_invalid: bool,
                 image_base: Path | None = None, duplicate_ids: str = "error"):
        self.path, self.format, self.format_detected = path, format, format_detected
        self.image_base = image_base
        """The directory local images must lie under (recorded in a run's manifest); None: no local images."""
        self.stats = SourceStats()
        self._records, self._read_record, self._skip_invalid = records, read_record, skip_invalid
        self._duplicate_ids = duplicate_ids
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
        # ~80 bytes a trajectory (a set of digests and a dict of id strings were ~340, what grew most in a resume):
        # the 128-bit digests of the (question, steps) seen, and per id's digest the file number << 32 | line that
        # first used it (two candidates must never share a unit id; a chance collision: ~1e-26 in 1e6 ids).
        seen, first_use, files = Digests(), Digests(), list[str]()
        for where, stem, line, record, problem in self._records():
            self.stats.read += 1
            try:
                if problem is not None:
                    raise BadRecord(problem)
                result = self._read_record(record, f"{stem}:{line}", where)
            except BadRecord as bad:
                if not self._skip_invalid:
                    raise InputError(where, line, str(bad)) from None
                self.stats.invalid += 1
                continue
            if isinstance(result, str):
                self.stats.skipped[result] += 1
                continue
            digest = hashlib.blake2b(json.dumps([result.question, result.steps]).encode(), digest_size=16).digest()
            if seen.add(digest) is not None:
                self.stats.skipped["duplicate"] += 1
                continue
            if not files or files[-1] != where:
                files.append(where)
            first = first_use.add(text_digest(result.id), (len(files) - 1) << 32 | line)
            if first is not None:
                if self._duplicate_ids == "first":
                    self.stats.skipped["duplicate_id"] += 1
                    continue
                first_where, first_line = files[first >> 32], first & 0xFFFFFFFF
                other = f"line {first_line}" if first_where == where else f"{first_where}:{first_line}"
                raise InputError(where, line, f"trajectory id {result.id!r} is also the id of a different record "
                                 f"({other}); give each record its own id, or pass --duplicate-ids first to keep "
                                 "the first and skip the others")
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


def load_trajectories(source: str | Path | None = None, format: str | None = None, *, strict: bool = False,
                      skip_invalid: bool = False, fields: dict[str, str] | None = None,
                      split: str | None = None, images_from: str | Path | None = None,
                      duplicate_ids: str = "error") -> TrajectorySource:
    """Open `source` (a JSONL file, a directory, or `hf:NAME[:SPLIT]`; default: the bundled sample).

    `strict` applies to PRM800K (every chosen step rated 1); `fields` maps `{TARGET: SOURCE}` (dotted SOURCE)
    and implies the `trajectories` format; `skip_invalid` counts malformed records instead of raising.
    Local images must lie under `images_from`, by default the input file's directory (a Hugging Face dataset has
    none); any other local image is a `FILE:LINE` error when its record is read, before any request for it.
    `duplicate_ids` is one of `DUPLICATE_ID_POLICIES`.
    """
    if duplicate_ids not in DUPLICATE_ID_POLICIES:
        raise UserError(f"unknown duplicate-ids policy {duplicate_ids!r}; choose one of: "
                        f"{', '.join(DUPLICATE_ID_POLICIES)}")
    if format is not None:
        get_format(format)  # an unknown name fails here, before any file is opened
    if fields:
        from injector.sources.formats.trajectories import check_fields

        check_fields(fields)
        if format not in (None, "trajectories"):
            raise UserError(f"--field maps records onto the trajectories format; it cannot be used with {format!r}")
        format = "trajectories"
    label, records = _open(source, split)
    image_base = _image_base(source, images_from)
    detected = format is None
    record_format = get_format(format if format is not None else _detect(label, records, skip_invalid))
    _check_options(record_format, strict=strict)
    options = ReadOptions(strict=strict, fields=fields, image_base=image_base)
    # duplicate_ids is not part of the run's identity: both policies select the same trajectories whenever the
    # default one lets a run start at all.
    loaded = TrajectorySource(label, record_format.name, detected, records,
                              lambda record, origin, where: record_format.read(record, origin, where, options),
                              skip_invalid, image_base, duplicate_ids)
    loaded.options = {"strict": strict, "fields": fields or {}, "split": split}
    return loaded


def _check_options(record_format: RecordFormat, **given: object) -> None:
    """Refuse a loader option the format does not take (it would be silently ignored)."""
    for option, value in given.items():
        if value and option not in record_format.options:
            takers = [other.name for other in formats() if option in other.options]
            raise UserError(f"--{option} applies to the {' and '.join(takers) or 'no'} format, not to "
                            f"{record_format.name!r}; drop it, or choose the format with --input-format")


def _detect(label: str, records: Callable[[], Generator[RawRecord, None, None]], skip_invalid: bool) -> str:
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
                                 f"{', '.join(format_names())}; choose one with --input-format, or map fields "
                                 "with --field TARGET=SOURCE")
            return found
    raise UserError(f"{label}: no records to read, so the format cannot be detected; the input is empty")


# ---- where records come from -------------------------------------------------------------------------------

def _is_saved_dataset(path: Path) -> bool:
    return any((path / name).is_file() for name in ("dataset_info.json", "state.json", "dataset_dict.json"))


def _image_base(source: str | Path | None, images_from: str | Path | None) -> Path | None:
    """`--images-from DIR`, else the directory of a JSONL input; a Hugging Face dataset has none."""
    if images_from is not None:
        base = Path(images_from).expanduser()
        if not base.is_dir():
            raise UserError(f"--images-from {images_from}: not a directory; name the directory holding the images")
        return base.resolve()
    if str(source).startswith("hf:"):
        return None
    path = Path(source) if source is not None else bundled_data_path()
    if path.is_dir():
        return None if _is_saved_dataset(path) else path.resolve()
    return path.parent.resolve()


def _open(source: str | Path | None, split: str | None) -> tuple[str, Callable[[], Generator[RawRecord, None, None]]]:
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
        if _is_saved_dataset(path):
            return _open_saved(path, split)
        files = sorted(p for p in path.iterdir() if p.is_file() and p.name.endswith((".jsonl", ".json", ".jsonl.gz")))
        if not files:
            raise UserError(f"{path}: no .jsonl files in this directory, and it is not a Hugging Face "
                            "save_to_disk directory")
        return text, lambda: (raw for file in files for raw in _jsonl_records(file))
    if split is not None:
        raise UserError(f"{path} is a file; a split applies only to Hugging Face datasets")
    return text, lambda: _jsonl_records(path)


def _jsonl_records(path: Path) -> Generator[RawRecord, None, None]:
    """Stream a JSONL file (gzip when it ends in .gz), decoding line by line so one bad line stays one."""
    where, stem = str(path), path.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".json")
    with closing(_lines(path)) as lines:
        for line_no, raw in enumerate(lines, 1):
            if line_no == 1 and (what := not_jsonl(raw)) is not None:
                raise InputError(path, 1, what)  # the whole file is of another kind: one message, not one a line
            try:
                text = raw.decode("utf-8-sig" if line_no == 1 else "utf-8")
            except UnicodeDecodeError:
                yield where, stem, line_no, None, "not UTF-8 text; save the file as UTF-8"
                continue
            if not text.strip():
                continue
            try:
                record = loads_bounded(text)
            except JsonRefused as exc:
                yield where, stem, line_no, None, f"{exc}; no record format needs that, so this line is not usable"
                continue
            except json.JSONDecodeError as exc:
                hint = ("; this looks like a JSON array, but each line must hold one JSON object (JSONL)"
                        if text.strip() == "[" else "; each line must hold one complete JSON object")
                yield where, stem, line_no, None, f"malformed JSON: {exc.msg} at column {exc.colno}{hint}"
                continue
            if not isinstance(record, dict):
                yield where, stem, line_no, None, f"expected a JSON object, found {type(record).__name__}"
                continue
            yield where, stem, line_no, record, None


def _lines(path: Path) -> Generator[bytes, None, None]:
    """The raw lines of a file, gunzipped when it ends in .gz; damaged gzip data is a FILE:LINE error."""
    if path.suffix != ".gz":
        with path.open("rb") as handle:
            yield from handle
        return
    line_no = 0
    try:
        with gzip.open(path, "rb") as handle:
            for line_no, raw in enumerate(handle, 1):
                yield raw
    except gzip.BadGzipFile as exc:
        if line_no == 0 and "Not a gzipped file" in str(exc):
            raise InputError(path, 1, "not gzip data, though the name ends in .gz; compress it with gzip, or "
                             "drop the .gz from its name if it is plain JSONL") from None
        raise InputError(path, line_no + 1, f"damaged gzip data ({exc}); download or compress it again") from None
    except EOFError:
        raise InputError(path, line_no + 1, "the gzip data ends early (a truncated or partly downloaded file); "
                         "download or compress it again") from None
    except zlib.error as exc:
        raise InputError(path, line_no + 1, f"damaged gzip data ({exc}); download or compress it again") from None


def _datasets() -> Any:
    import datasets  # lazy: slow to import, and needed only for Hugging Face inputs

    return datasets


def _open_saved(path: Path, split: str | None) -> tuple[str, Callable[[], Generator[RawRecord, None, None]]]:
    try:
        data = _datasets().load_from_disk(str(path))
    except Exception as exc:  # noqa: BLE001 - datasets raises many kinds; its message reaches the user (exit 2)
        raise UserError(f"{path}: cannot load this Hugging Face dataset directory: {exc}") from None
    return _rows(str(path), path.name, data, split)


def _open_hub(spec: str, split: str | None) -> tuple[str, Callable[[], Generator[RawRecord, None, None]]]:
    name, _, named_split = spec.partition(":")
    if not name:
        raise UserError("hf: needs a dataset name, e.g. hf:openai/gsm8k:train")
    if named_split and split and named_split != split:
        raise UserError(f"hf:{spec} names split {named_split!r} but split {split!r} was also given")
    try:
        data = _datasets().load_dataset(name)
    except Exception as exc:  # noqa: BLE001 - datasets raises many kinds; its message reaches the user (exit 2)
        raise UserError(f"cannot load Hugging Face dataset {name!r}: {type(exc).__name__}: {exc}. Without "
                        "network access it must already be in the local Hugging Face cache; or save it with "
                        "Dataset.save_to_disk and pass that directory") from None
    return _rows(f"hf:{name}", name.rsplit("/", 1)[-1], data, named_split or split)


def _rows(label: str, stem: str, data: Any, split: str | None) -> tuple[str, Callable[[], Generator[RawRecord, None, None]]]:
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
