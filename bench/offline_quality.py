"""Quality of the offline engine's candidates, per category, on the bundled sample and on PRMBench's 401
train-phase-1 source problems (`bench/data/train-p1-originals.jsonl`).

For every category the offline engine supports (`--category all`), `--samples` candidates per trajectory:
1. candidates, `not_applicable` units, and the share passing the category's semantic check
   (`tests/semantic_checks/<category>.py`; "no check" where a category has none);
2. the share whose final answer changed (the `\\boxed{}` / `# Answer` text, else the last number of the last step
   that has one; compared with `injector.answer.final.answers_equivalent`);
3. the cue AUC of `injector.triage.cues` (the probe of `inject stats --cues`) over the category's candidates, with the
   number of candidates (records) and steps it rests on;
4. variety: the word 4-grams of changed or inserted steps that do not occur in the original solution; the share of
   candidates containing the most frequent such 4-gram (lower is more varied; "-" when no step is changed);
5. coverage: the share of trajectories the category applies to (at least one candidate).
Also candidates per second (operator, parse and validation; `inject_one`); the position-only and length-only
probes' AUCs beside the word probe's; and, with `--reference DIR` (PRMBench's GPT-4o category files), the three
probes on our candidates and on PRMBench's records of the same part's problems at matched size (mean AUC of 20
random subsets of the larger set, each the size of the smaller, with its spread).

Every data set is cut into its dev part and its test part by `injector.triage.holdout.source_part` (a hash of the
normalised question): tune on the dev part's figures; quote only the test part's.

    python bench/offline_quality.py [--category all] [--samples 3] [--data bundled,prmbench] [--part dev,test]
        [--reference PRMBENCH_TRAIN_P1_DIR] [--json FILE]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the semantic checks live with the tests

from semantic_checks import checks_for  # noqa: E402

from injector import OfflineEngine, Taxonomy, inject_one, load_trajectories  # noqa: E402
from injector.answer.final import answers_equivalent, final_answer_of_steps  # noqa: E402
from injector.triage.cues import cue_records, cue_report, matched_comparison  # noqa: E402
from injector.triage.holdout import in_part, source_part  # noqa: E402
from injector.engines.offline import OPERATORS, WITHDRAWN_OPERATORS  # noqa: E402

# The withdrawn operators are measured too: their figures are why they are withdrawn.
MEASURED = {**OPERATORS, **WITHDRAWN_OPERATORS}
from injector.records.models import Candidate  # noqa: E402

DATA = {"bundled": None, "prmbench": ROOT / "bench" / "data" / "train-p1-originals.jsonl"}
# numerical_calculation is ProJudge's category: it needs that taxonomy.
TAXONOMY_OF = {"numerical_calculation": "projudge"}


def final_answer(steps: list[str]) -> str | None:
    answer = final_answer_of_steps(steps)
    if answer is not None:
        return answer
    for step in reversed(steps):  # PRM800K solutions without an answer line: the last number stated
        numbers = re.findall(r"-?\d+(?:\.\d+)?(?:/\d+)?", step)
        if numbers:
            return numbers[-1]
    return None


def four_grams(text: str) -> set[tuple[str, ...]]:
    words = text.lower().split()
    return {tuple(words[i:i + 4]) for i in range(len(words) - 3)}


def measure(category_id: str, trajectories: list, samples: int, seed: int) -> dict[str, Any]:
    taxonomy = Taxonomy.load(TAXONOMY_OF.get(category_id))
    category, engine = taxonomy.category(category_id), OfflineEngine(operators=WITHDRAWN_OPERATORS)
    pairs, not_applicable, other_rejects, covered = [], 0, 0, set()
    start = time.perf_counter()
    for trajectory in trajectories:
        for sample in range(samples):
            record = asyncio.run(inject_one(taxonomy, category, trajectory, engine, seed=seed, sample=sample))
            if isinstance(record, Candidate):
                pairs.append((trajectory, record.model_dump(mode="json")))
                covered.add(trajectory.id)
            elif record.codes == ["not_applicable"]:
                not_applicable += 1
            else:
                other_rejects += 1
    elapsed = time.perf_counter() - start
    row: dict[str, Any] = {"category": category_id, "candidates": len(pairs), "not_applicable": not_applicable,
                           "other_rejects": other_rejects, "seconds": elapsed,
                           "coverage": len(covered) / len(trajectories) if trajectories else 0.0}
    module = checks_for(category_id)
    if module is None:
        row["check"] = None
    else:
        passing = sum(not module.check(original, candidate) for original, candidate in pairs)
        row["check"] = passing / len(pairs) if pairs else 0.0
        if hasattr(module, "check_all") and pairs:
            row["check_all_problems"] = len(module.check_all(pairs))
    changed = sum(not answers_equivalent(final_answer(c["original_process"]), final_answer(c["modified_process"]))
                  for _, c in pairs)
    row["answer_changed"] = changed / len(pairs) if pairs else 0.0
    records = [{"category": category_id, "group": c["idx"], "steps": c["modified_process"],
                "error_steps": sorted({k for k in c["error_steps"] if 1 <= k <= len(c["modified_process"])}),
                "outside": 0} for _, c in pairs]
    probe = cue_report(records)["per_category"].get(category_id, {}) if records else {}
    row["cue_auc"], row["cue_steps"] = probe.get("auc"), probe.get("n", 0)
    row["position_auc"] = (probe.get("position") or {}).get("auc")
    row["length_auc"] = (probe.get("length") or {}).get("auc")
    row["records"] = records
    row["cue_records"] = sum(1 for r in records if r["error_steps"])
    row["cue_reason"] = probe.get("reason")
    grams: Counter = Counter()
    for _, c in pairs:
        original = set().union(*(four_grams(s) for s in c["original_process"])) if c["original_process"] else set()
        new = set().union(*(four_grams(c["modified_process"][k - 1]) for k in c["modified_steps"])) \
            if c["modified_steps"] else set()
        grams.update(new - original)
    # Ties broken by the 4-gram itself, so the printed one does not depend on set order (string hashing).
    top = sorted(grams.items(), key=lambda item: (-item[1], item[0]))[:1]
    row["top_4gram"] = " ".join(top[0][0]) if top else None
    row["top_4gram_share"] = top[0][1] / len(pairs) if top else None
    return row


def table(rows: list[dict[str, Any]], trajectories: int) -> str:
    def pct(value: float | None) -> str:
        if value is None:
            return "-"
        return f"{100 * value:.1f} %" if 0 < value < 0.1 else f"{100 * value:.0f} %"  # 2 of 401 is not "0 %"

    lines = ["| category | candidates | not_applicable | passes check | answer changed | cue AUC (records / steps) "
             "| top new 4-gram share | coverage | candidates/s |",
             "|---|---:|---:|---:|---:|---|---:|---:|---:|"]
    for r in rows:
        check = "no check" if r["check"] is None else pct(r["check"])
        auc = "-" if r["cue_auc"] is None else f"{r['cue_auc']:.2f}"
        rate = r["candidates"] / r["seconds"] if r["seconds"] > 0 else 0.0
        lines.append(f"| {r['category']} | {r['candidates']} | {r['not_applicable']} | {check} | "
                     f"{pct(r['answer_changed'])} | {auc} ({r['cue_records']} / {r['cue_steps']}) | "
                     f"{pct(r['top_4gram_share'])} | {pct(r['coverage'])} | {rate:.0f} |")
    total = sum(r["candidates"] for r in rows)
    seconds = sum(r["seconds"] for r in rows)
    lines.append(f"\n{trajectories} trajectories; {total} candidates in {seconds:.1f} s "
                 f"({total / seconds if seconds else 0:.0f} candidates/s overall).")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--category", default="all", help="a category id, a comma-separated list, or all")
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", default="bundled,prmbench", help=f"comma-separated: {', '.join(DATA)}")
    parser.add_argument("--part", default="dev,test", help="comma-separated: dev, test")
    parser.add_argument("--reference", help="a directory of PRMBench-format category files to compare with")
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    args = parser.parse_args()
    categories = list(MEASURED) if args.category == "all" else args.category.split(",")
    unknown = [c for c in categories if c not in MEASURED]
    if unknown:
        parser.error(f"the offline engine has no operator for {', '.join(unknown)}")
    results = {}
    for name in args.data.split(","):
        if name not in DATA:
            parser.error(f"unknown data set {name!r}; choose from {', '.join(DATA)}")
        for part in args.part.split(","):
            trajectories = in_part(load_trajectories(DATA[name]), part)  # type: ignore[arg-type]
            rows = [measure(c, trajectories, args.samples, args.seed) for c in categories]
            print(f"\n### {name}, {part} part: --category {args.category} --samples {args.samples} "
                  f"--seed {args.seed}\n")
            print(table(rows, len(trajectories)))
            print_rows(rows, part, args.reference)
            results[f"{name}:{part}"] = [{k: v for k, v in r.items() if k != "records"} for r in rows]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")


def reference_records(directory: str, part: str) -> list[dict[str, Any]]:
    """PRMBench's records (as the cue probe reads them) of the problems in `part`."""
    from injector.curate.stats import load_records

    loaded = [(r, s) for r, s in load_records(Path(directory))
              if source_part(r.get("original_question") or r.get("question") or "") == part]
    return cue_records(loaded)


def print_rows(rows: list[dict[str, Any]], part: str, reference: str | None) -> None:
    print("\nprobes (word / position / length AUC): "
          + "; ".join(f"{r['category']} {_auc(r['cue_auc'])} / {_auc(r['position_auc'])} / "
                      f"{_auc(r['length_auc'])}" for r in rows))
    if reference:
        theirs = reference_records(reference, part)
        print("\nat matched size, ours vs PRMBench's (mean ± sd over subsets of the larger set):")
        for r in rows:
            mine = [x for x in theirs if x["category"] == r["category"]]
            if not r["records"] or not mine:
                continue
            sys.stdout.flush()  # the probe's workers must not inherit (and print again) buffered output
            m = matched_comparison(r["records"], mine)
            print(f"- {r['category']} (n = {m['size']} solutions each): " + "; ".join(
                f"{w} {_spread(m['ours'][w])} vs {_spread(m['reference'][w])}" for w in ("word", "position", "length")))
            r["matched"] = m
    for r in rows:
        notes = [f"top new 4-gram: \"{r['top_4gram']}\"" if r["top_4gram"] else None,
                 f"cue AUC not measured: {r['cue_reason']}" if r["cue_reason"] else None,
                 f"{r['other_rejects']} other rejects" if r["other_rejects"] else None,
                 f"check_all: {r['check_all_problems']} problem(s)" if r.get("check_all_problems") else None]
        notes = [n for n in notes if n]
        if notes:
            print(f"- {r['category']}: " + "; ".join(notes))


def _auc(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _spread(figure: dict) -> str:
    """An AUC with its spread over subsets, or "not measured" (too few problems for the folds)."""
    return "not measured" if figure["auc"] is None else f"{figure['auc']:.2f}±{figure['sd'] or 0:.3f}"


if __name__ == "__main__":
    main()
