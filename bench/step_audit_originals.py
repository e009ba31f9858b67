"""False alarms of the step audit on original (correct) solutions, its coverage and its speed.

The source problems are split into a dev part (looked at while building the audit) and a test part (only
measured) by the codebase's one rule, `injector.triage.holdout.source_part` (a salted hash of the problem key):
quote the test part. Until 2026-12-02 this bench split by its own rule (the first hex digit of sha256 of the
lower-cased question, even -> dev), under which the checker was tuned on its dev part (its test part was read once,
and two fixes came of that reading); `--held-out-before` keeps only the problems that rule held out too.

    python bench/step_audit_originals.py --part test [--show] [--held-out-before]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import re
import time
from pathlib import Path

from injector.triage.holdout import source_part
from injector.triage.step_audit import audit_steps, default_worker

DATA = Path(__file__).parent / "data" / "train-p1-originals.jsonl"


def earlier_part(question: str) -> str:
    """The bench's earlier rule: the first hex digit of sha256 of the lower-cased, space-collapsed question, even ->
    dev (the checker's fixes before 2026-12-02 were found on its dev part and on one reading of its test part)."""
    normalised = re.sub(r"\s+", " ", question.strip().lower())
    return "dev" if int(hashlib.sha256(normalised.encode()).hexdigest()[0], 16) % 2 == 0 else "test"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["dev", "test", "all"], default="test")
    parser.add_argument("--show", action="store_true", help="print every false alarm and every uncertain check")
    parser.add_argument("--held-out-before", action="store_true", help="only problems the earlier rule held out too")
    parser.add_argument("--data", type=Path, default=DATA)
    options = parser.parse_args()
    records = [json.loads(line) for line in options.data.open(encoding="utf-8") if line.strip()]
    records = [r for r in records if options.part == "all" or source_part(r["question"]) == options.part]
    if options.held_out_before:
        records = [r for r in records if earlier_part(r["question"]) == "test" and source_part(r["question"]) == "test"]
    worker = default_worker()
    worker.sides("1", "1")  # start the worker (and import sympy) outside the timed loop
    steps = checked = links = alarms = uncertain = skipped = 0
    started, cpu_started = time.perf_counter(), time.process_time()
    worker_cpu = worker.cpu_seconds()
    slowest = 0.0
    for record in records:
        before = time.perf_counter()
        audit = audit_steps(record["steps"], worker)
        slowest = max(slowest, (time.perf_counter() - before) / max(1, len(record["steps"])))
        steps += len(audit.steps)
        checked += audit.checked_steps
        skipped += sum(step.skipped for step in audit.steps)
        for step in audit.steps:
            links += len(step.checks)
            for check in step.checks:
                if check.status == "false":
                    alarms += 1
                uncertain += check.status == "uncertain"
                if options.show and check.status != "true":
                    print(f"{record['id']} step {step.step}: {check.status} {check.uncertainty or ''} "
                          f"{check.relation!r} true={check.true_value} | {record['steps'][step.step - 1][:160]!r}")
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started + worker.cpu_seconds() - worker_cpu
    alarm_steps = alarms
    print(f"part={options.part} problems={len(records)} steps={steps} checked_steps={checked} "
          f"coverage={checked / steps:.1%} links_checked={links} links_skipped={skipped} uncertain={uncertain}")
    print(f"false alarms: {alarm_steps} relations = {alarm_steps / steps:.3%} of steps")
    print(f"speed: {steps / elapsed:,.0f} steps/s wall, {steps / cpu:,.0f} steps per CPU-second "
          f"(worker included); slowest solution {slowest * 1000:.1f} ms/step; sympy timeouts {worker.timeouts}")
    worker.close()


if __name__ == "__main__":
    main()
