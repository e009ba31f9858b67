"""What a split directory holds besides the dataset itself: PRMBench's own files, ProcessBench-style, judge-training
and ProJudgeBench-style exports, the Parquet and JSONL copies, and the card; `build` decides the rows."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from injector.util.safe_files import is_file_safe_id
from injector.answer.final import answers_equivalent, final_answer_of_steps

# PRMBench's own fields, in its order: what `prmbench/<classification>.jsonl` holds and nothing else.
PRMBENCH_FIELDS = ("original_question", "modified_question", "original_process", "modified_process",
                   "modified_steps", "error_steps", "reason", "idx", "question", "classification")
EXPORT_DIRS = ("parquet", "jsonl", "prmbench", "processbench", "judge", "projudge")


def processbench_record(row: dict[str, Any]) -> dict[str, Any]:
    """ProcessBench's shape: `label` is the 0-based index of the first error step, -1 for none."""
    steps = row["modified_process"]
    source_answer = row.get("ground_truth") or final_answer_of_steps(row["original_process"])
    return {
        "id": row["id"],
        "generator": row["model"],
        "problem": row["modified_question"],
        "steps": steps,
        "final_answer_correct": answers_equivalent(final_answer_of_steps(steps), source_answer),
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


def _write_jsonl(path: Path, records: Iterable[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_split(out: Path, dataset: Any, splits: dict[str, list], rows: list[dict[str, Any]], card: str) -> None:
    """Every file of a split directory, into `out`."""
    dataset.save_to_disk(str(out))
    for name, split in dataset.items():
        (out / "parquet").mkdir(exist_ok=True)
        split.to_parquet(str(out / "parquet" / f"{name}.parquet"))
        _write_jsonl(out / "jsonl" / f"{name}.jsonl", splits[name])
        _write_jsonl(out / "processbench" / f"{name}.jsonl", map(processbench_record, splits[name]))
        _write_jsonl(out / "judge" / f"{name}.jsonl", map(judge_record, splits[name]))
        _write_jsonl(out / "projudge" / f"{name}.jsonl", map(projudge_record, splits[name]))
    by_classification: dict[str, list] = defaultdict(list)
    for row in sorted(rows, key=lambda r: (r["classification"], r["idx"])):
        by_classification[row["classification"]].append({key: row[key] for key in PRMBENCH_FIELDS})
    for classification, records in by_classification.items():
        if not is_file_safe_id(classification):  # the build checked it; a file name is never a raw string
            raise ValueError(f"not a category id: {classification[:80]!r}")
        _write_jsonl(out / "prmbench" / f"{classification}.jsonl", records)
    (out / "README.md").write_text(card, encoding="utf-8")
