"""What a split directory holds besides the dataset itself: PRMBench's own files, ProcessBench-style, judge-training
and ProJudgeBench-style exports, the Parquet and JSONL copies, and the card; `build` decides the rows."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import IO, Any, Callable, Iterable

from injector.util.safe_files import is_file_safe_id
from injector.answer.final import answers_equivalent, final_answer_of_steps

# PRMBench's own fields, in its order: what `prmbench/<classification>.jsonl` holds and nothing else.
PRMBENCH_FIELDS = ("original_question", "modified_question", "original_process", "modified_process",
                   "modified_steps", "error_steps", "reason", "idx", "question", "classification")
EXPORT_DIRS = ("parquet", "jsonl", "prmbench", "processbench", "judge", "projudge")


Answers = tuple[Any, str | None]
"""A row's final answers: the source's (`ground_truth`, else its original steps') and the modified solution's."""


def final_answers(row: dict[str, Any]) -> Answers:
    """The row's `Answers`, each found once for what needs them (its ProcessBench record and the card's figures)."""
    return (row.get("ground_truth") or final_answer_of_steps(row["original_process"]),
            final_answer_of_steps(row["modified_process"]))


def processbench_record(row: dict[str, Any], answers: Answers | None = None) -> dict[str, Any]:
    """ProcessBench's shape: `label` is the 0-based index of the first error step, -1 for none (`answers`:
    `final_answers(row)`, when the caller has them)."""
    steps = row["modified_process"]
    source_answer, new_answer = final_answers(row) if answers is None else answers
    return {
        "id": row["id"],
        "generator": row["model"],
        "problem": row["modified_question"],
        "steps": steps,
        "final_answer_correct": answers_equivalent(new_answer, source_answer),
        "label": min(row["error_steps"]) - 1 if row["error_steps"] else -1,
    }


def judge_record(row: dict[str, Any]) -> dict[str, Any]:
    """A judge-training item, as ProJudge-173k trains open judges: the solution in, a verdict per step out."""
    numbered = "\n".join(f"Step {k}: {step}" for k, step in enumerate(row["modified_process"], 1))
    explanations = {item["step"]: item["text"] for item in row["explanations"]}
    target = []
    for k in range(1, len(row["modified_process"]) + 1):
        if k in row["error_steps"]:
            target.append({"step": k, "label": "incorrect", "category": row["category"],
                           "reason": explanations.get(k, row["reason"])})
        else:
            target.append({"step": k, "label": "correct"})
    return {"id": row["id"], "prompt": f"Question: {row['modified_question']}\n\n{numbered}", "target": target}


def split_features() -> Any:
    """One explicit schema for every split, so a column that is empty in one split has the same type everywhere."""
    from datasets import Features, List, Value

    text, number = Value("string"), Value("int64")
    columns: dict[str, Any] = {name: text for name in PRMBENCH_FIELDS}
    columns.update(original_process=List(text), modified_process=List(text), modified_steps=List(number),
                   error_steps=List(number))
    columns.update(source_idx=text, id=text, category=text, category_name=text, domain=text, subject=text,
                   images=List(text), trajectory_id=text, problem_key=text, sample=number, run=text,
                   reviewed=Value("bool"), reviewer=text, warnings=List(text),
                   explanations=List({"step": number, "text": text}), ground_truth=text, model=text, provenance=text)
    return Features(columns)


def projudge_record(row: dict[str, Any]) -> dict[str, Any]:
    """ProJudgeBench's shape: `process_evaluation` = [step, "1"|"0", error type, explanation] per step."""
    explanations = {item["step"]: item["text"] for item in row["explanations"]}
    evaluation = []
    for k, step in enumerate(row["modified_process"], 1):
        if k in row["error_steps"]:
            evaluation.append([step, "0", row["category_name"], explanations.get(k, row["reason"])])
        else:
            evaluation.append([step, "1", "", ""])
    return {"id": row["id"], "question": row["modified_question"], "subject": row["subject"] or "",
            "image_paths": row["images"], "process_evaluation": evaluation}


def _open_export(path: Path) -> IO[str]:
    """A JSONL file of the split, opened for writing (every export file is opened here)."""
    return path.open("w", encoding="utf-8")


# The JSONL files of each split: directory -> what a row becomes there (from the row and its `Answers`).
_SPLIT_EXPORTS: tuple[tuple[str, Callable[[dict[str, Any], Answers], dict[str, Any]]], ...] = (
    ("jsonl", lambda row, _: dict(row)), ("processbench", processbench_record),
    ("judge", lambda row, _: judge_record(row)), ("projudge", lambda row, _: projudge_record(row)))
RowObserver = Callable[[dict[str, Any], Answers], None]
"""Called with each split row as it is written, and its `Answers` (a build counts its card's figures so)."""
WRITER_BATCH = 500
"""Rows a split's Arrow writer holds before it writes them out."""


def _stream_split(out: Path, name: str, records: Iterable[dict[str, Any]], features: Any,
                  observe: RowObserver | None = None) -> int:
    """One split's rows, as they come, into its JSONL exports, its saved-dataset shards and its Parquet file
    (`saved_dataset.py`, `WRITER_BATCH` rows a write), each row into `observe` too; the number of rows."""
    from injector.curate.saved_dataset import SavedSplitWriter

    with contextlib.ExitStack() as stack:
        handles = []
        for directory, _ in _SPLIT_EXPORTS:
            (out / directory).mkdir(exist_ok=True)
            handles.append(stack.enter_context(_open_export(out / directory / f"{name}.jsonl")))
        tables = stack.enter_context(SavedSplitWriter(out, name, features, WRITER_BATCH))
        count = 0
        for record in records:
            answers = final_answers(record)
            if observe is not None:
                observe(record, answers)
            for handle, (_, shape) in zip(handles, _SPLIT_EXPORTS):
                handle.write(json.dumps(shape(record, answers), ensure_ascii=False) + "\n")
            tables.write(record)
            count += 1
        tables.finish()
    return count


def write_split(out: Path, splits: dict[str, Callable[[], Iterable[dict[str, Any]]]],
                prmbench_rows: Iterable[dict[str, Any]], card: Callable[[], str],
                observe: RowObserver | None = None) -> None:
    """Every file of a split directory, into `out`, streamed: `splits` gives each split's records in order, one at
    a time (the saved DatasetDict, Parquet and JSONL forms are written from them as they come, nothing read back;
    `observe` sees each of them, split after split), `prmbench_rows` every row in (classification, idx) order, and
    `card` the card once the rest is written."""
    from injector.curate.saved_dataset import write_dataset_dict

    features = split_features()
    for name, records in splits.items():
        _stream_split(out, name, records(), features, observe)
    write_dataset_dict(out, list(splits))
    _write_prmbench(out, prmbench_rows)
    (out / "README.md").write_text(card(), encoding="utf-8")


def _write_prmbench(out: Path, rows: Iterable[dict[str, Any]]) -> None:
    """PRMBench's per-classification files from rows in (classification, idx) order, each file opened in turn."""
    (out / "prmbench").mkdir(exist_ok=True)
    handle: IO[str] | None = None
    current = None
    try:
        for row in rows:
            if row["classification"] != current:
                current = row["classification"]
                if not is_file_safe_id(current):  # the build checked it; a file name is never a raw string
                    raise ValueError(f"not a category id: {current[:80]!r}")
                if handle is not None:
                    handle.close()
                handle = _open_export(out / "prmbench" / f"{current}.jsonl")
            assert handle is not None
            handle.write(json.dumps({key: row[key] for key in PRMBENCH_FIELDS}, ensure_ascii=False) + "\n")
    finally:
        if handle is not None:
            handle.close()
