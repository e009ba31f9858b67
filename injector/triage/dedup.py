"""Near-duplicates and contamination, for `inject build --dedup` and `--decontaminate FILE`.

Near-duplicates (datasketch MinHash over word 5-grams of normalised text): within one split and one category, a
candidate is dropped when an earlier one of the same source trajectory has a modified solution whose estimated
Jaccard similarity is at least the threshold (the same error made twice), or when an earlier one of another source
has a question that similar (the source data holds the problem twice). The first in the split's order is kept.

Contamination: a candidate is dropped when its question, after `normalise`, equals a question of a benchmark file,
or shares a run of 13 words with one (the n-gram overlap test GPT-3's paper used; a question shorter than 13 words is
checked for equality only).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from injector.util.errors import InputError, UserError
from injector.util.json_bounds import JsonRefused, loads_bounded

SHINGLE_WORDS = 5
NUM_PERM = 128
NGRAM_WORDS = 13
QUESTION_FIELDS = ("question", "problem", "original_question", "modified_question")

# LaTeX spacing that does not change what a formula says: \, \: \; \! \> "\ " \quad \qquad (and "~").
_LATEX_SPACING = re.compile(r"\\[,:;!> ]|\\q?quad\b|~")
_SPACED_OPERATOR = re.compile(r"\s*([-+*/=<>^_(){}\[\],.;:|!?])\s*")
_WORDS = re.compile(r"\w+")


def normalise(text: str) -> str:
    """Text as compared: lower case, LaTeX spacing commands removed, runs of white space as one space, and no space
    around operators and brackets (so `$2 + 3$`, `$2+3$` and `$2\\,+\\,3$` are equal)."""
    text = _LATEX_SPACING.sub(" ", text.lower())
    text = " ".join(text.split())
    return _SPACED_OPERATOR.sub(r"\1", text)


@dataclass
class Dropped:
    """A row `build` left out, and why (listed in the dataset card)."""

    id: str
    category: str
    rule: str
    """`duplicate_solution`, `duplicate_question`, `benchmark_question` or `benchmark_ngram`."""
    detail: str
    """What it matched: the kept row's id and the similarity, or the benchmark's FILE:LINE (and the shared words)."""


# -- near-duplicates -----------------------------------------------------------------------------------------------

def _shingles(text: str) -> set[bytes]:
    words = normalise(text).split()
    if len(words) < SHINGLE_WORDS:
        return {" ".join(words).encode()}
    return {" ".join(words[i:i + SHINGLE_WORDS]).encode() for i in range(len(words) - SHINGLE_WORDS + 1)}


def _minhash(text: str) -> Any:
    from datasketch import MinHash  # imported here: only --dedup needs it

    signature = MinHash(num_perm=NUM_PERM, seed=1)  # a fixed seed: the same drops on every machine
    signature.update_batch(sorted(_shingles(text)))
    return signature


class _CategorySeen:
    """What one category's dedup keeps of the rows it has kept: the solution signatures of the current trajectory
    only (solutions are compared within a trajectory), and one question signature per kept (trajectory, question)
    — a later kept row of the same trajectory and question is never the earliest match — not the rows."""

    def __init__(self, threshold: float) -> None:
        from datasketch import MinHashLSH

        self.trajectory: str | None = None
        self.done: set[str] = set()
        """Trajectories whose rows are all seen: one seen again means the rows were not grouped."""
        self.solutions: list[tuple[str, Any]] = []  # (id, signature) of the current trajectory's kept rows
        self.questions = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)  # candidates; each pair is re-checked
        self.question_of: dict[str, tuple[str, Any, int]] = {}  # kept id -> (trajectory, hash values, kept order)
        self.asked: set[tuple[str, bytes]] = set()  # (trajectory, question digest) in `questions`

    def start(self, trajectory: str) -> None:
        if trajectory == self.trajectory:
            return
        if trajectory in self.done:
            raise ValueError(f"near_duplicates: trajectory {trajectory!r} seen again after others; pass the rows "
                             "grouped by category and trajectory (the order `assign_splits` gives)")
        if self.trajectory is not None:
            self.done.add(self.trajectory)
        self.trajectory, self.solutions = trajectory, []


def _similarity(signature: Any, hashvalues: Any) -> float:
    """MinHash's Jaccard estimate against stored hash values (`MinHash.jaccard`'s formula)."""
    import numpy

    return float(numpy.count_nonzero(signature.hashvalues == hashvalues)) / float(len(hashvalues))


def _duplicate(seen: _CategorySeen, row: dict[str, Any], threshold: float) -> tuple[str, str] | None:
    """(rule, detail) if `row` duplicates a row kept before it, else None (and it is kept)."""
    solution = _minhash("\n".join(row["modified_process"]))
    question = _minhash(row["original_question"])
    match = next(((kept, similarity) for kept, signature in seen.solutions
                  if (similarity := solution.jaccard(signature)) >= threshold), None)
    if match:
        return "duplicate_solution", f"solution like {match[0]}'s (MinHash Jaccard {match[1]:.2f})"
    others = [(kept, _similarity(question, seen.question_of[kept][1]), seen.question_of[kept][2])
              for kept in seen.questions.query(question) if seen.question_of[kept][0] != row["trajectory_id"]]
    others = [other for other in others if other[1] >= threshold]
    if others:
        kept, similarity, _ = min(others, key=lambda other: other[2])  # the earliest kept
        return "duplicate_question", f"question like {kept}'s, another source (MinHash Jaccard {similarity:.2f})"
    seen.solutions.append((row["id"], solution))
    asked = (row["trajectory_id"], hashlib.sha256(row["original_question"].encode()).digest())
    if row["id"] not in seen.question_of and asked not in seen.asked:
        seen.asked.add(asked)
        seen.question_of[row["id"]] = (row["trajectory_id"], question.hashvalues, len(seen.question_of))
        seen.questions.insert(row["id"], question)
    return None


def near_duplicates(rows: Iterable[dict[str, Any]], threshold: float) -> list[Dropped]:
    """The rows of one split to drop as near-duplicates of an earlier row (see the module docstring), in order.

    The rows stream, grouped by category and, within one, by trajectory (the order `assign_splits` gives; a
    ValueError otherwise): what is kept is a category's signatures, never the rows."""
    dropped: list[Dropped] = []
    done: set[str] = set()
    category: str | None = None
    seen: _CategorySeen | None = None
    for row in rows:
        if row["category"] != category:
            if row["category"] in done:
                raise ValueError(f"near_duplicates: category {row['category']!r} seen again after others; pass "
                                 "the rows grouped by category and trajectory (the order `assign_splits` gives)")
            if category is not None:
                done.add(category)
            category, seen = row["category"], _CategorySeen(threshold)
        assert seen is not None
        seen.start(row["trajectory_id"])
        if (duplicate := _duplicate(seen, row, threshold)) is not None:
            dropped.append(Dropped(row["id"], row["category"], *duplicate))
    return dropped


# -- contamination ---------------------------------------------------------------------------------------------------

@dataclass
class Benchmark:
    """The questions of the benchmark files given: each normalised question and each 13-word run, with where it is."""

    questions: dict[str, str]
    ngrams: dict[tuple[str, ...], str]
    count: int = 0


def _ngrams(text: str) -> Iterator[tuple[str, ...]]:
    words = _WORDS.findall(normalise(text))
    return (tuple(words[i:i + NGRAM_WORDS]) for i in range(len(words) - NGRAM_WORDS + 1))


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """(line, value) of each record of a JSONL file or of a JSON array (the line its element starts on)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"{path}: no such file; give a benchmark file (JSONL, or a JSON array) to --decontaminate")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read it as UTF-8 text ({exc}); give a JSONL or JSON benchmark file")
    decoder = json.JSONDecoder()
    if text.lstrip().startswith("["):
        index = text.index("[") + 1
        while True:
            index = _skip(text, index)
            if index < len(text) and text[index] == "]":
                return
            line = text.count("\n", 0, index) + 1
            try:
                value, index = decoder.raw_decode(text, index)
            except json.JSONDecodeError as exc:
                raise InputError(path, exc.lineno, f"not valid JSON ({exc.msg}); fix the file") from None
            yield line, value
            end_line = text.count("\n", 0, index) + 1
            index = _skip(text, index)
            if index >= len(text):
                raise InputError(path, end_line, "not valid JSON (the array is not closed with ]); fix the file")
            if text[index] == ",":
                index += 1
            elif text[index] != "]":
                line = text.count("\n", 0, index) + 1
                raise InputError(path, line, "not valid JSON (expected , or ] after an element); fix the file")
    for number, raw in enumerate(text.splitlines(), 1):
        if raw.strip():
            try:
                yield number, loads_bounded(raw)
            except json.JSONDecodeError as exc:
                raise InputError(path, number, f"not valid JSON ({exc.msg}); each line of a JSONL file is one "
                                 "JSON object, or give a JSON array") from None
            except JsonRefused as exc:
                raise InputError(path, number, f"the line {exc}; fix the file") from None


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index].isspace():
        index += 1
    return index


def _field(record: Any, name: str) -> Any:
    """`record[name]`, a dotted name walking nested objects (`question.problem`); None when it is not there."""
    for part in name.split("."):
        if not isinstance(record, dict) or part not in record:
            return None
        record = record[part]
    return record


def read_benchmarks(paths: Iterable[str | Path], field: str | None = None) -> Benchmark:
    """The questions of benchmark files (JSONL, or a JSON array of objects); the question is read from `field` (a
    dotted name reaches into nested objects), else from the first of `QUESTION_FIELDS` a record has. A record
    without one is an `InputError` naming FILE:LINE."""
    names = (field,) if field else QUESTION_FIELDS
    benchmark = Benchmark({}, {})
    for path in map(Path, paths):
        for line, record in _records(path):
            where = f"{path}:{line}"
            found = next((value for name in names if isinstance(value := _field(record, name), str)), None)
            if found is None or not found.strip():
                what = "not a JSON object" if not isinstance(record, dict) else f"no text in {' or '.join(names)}"
                hint = ("name the question's field with --decontaminate-field (a dotted name reaches into nested "
                        "objects: question.problem for PRM800K)") if not field else "check the field name"
                raise InputError(path, line, f"{what}; {hint}")
            benchmark.count += 1
            benchmark.questions.setdefault(normalise(found), where)
            for ngram in _ngrams(found):
                benchmark.ngrams.setdefault(ngram, where)
    return benchmark


def contaminated(rows: list[dict[str, Any]], benchmark: Benchmark) -> list[Dropped]:
    """The rows whose question (original or modified) equals a benchmark question after `normalise`, or shares a
    13-word run with one."""
    dropped = []
    for row in rows:
        for question in dict.fromkeys((row["original_question"], row["modified_question"])):
            where = benchmark.questions.get(normalise(question))
            if where:
                dropped.append(Dropped(row["id"], row["category"], "benchmark_question",
                                       f"question equal to {where} after normalisation"))
                break
            shared = next((ngram for ngram in _ngrams(question) if ngram in benchmark.ngrams), None)
            if shared:
                dropped.append(Dropped(row["id"], row["category"], "benchmark_ngram",
                                       f"shares \"{' '.join(shared)}\" with {benchmark.ngrams[shared]}"))
                break
    return dropped
