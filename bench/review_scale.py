"""The review app at growing sizes (issue 30 item 3): start-up, a page and a decision, half the candidates decided.

Each size gets a run directory of synthetic candidates (two categories, each with its step audit as `inject run`
writes it, compact JSON) and a store whose first half is decided;
times are the median of repeated calls of the server's own work (`render_page`, and a decision as `_decide` makes
it: the view's next candidate, then `ReviewSession.decide`), without HTTP. Start-up is measured twice: first with
the queue index built from candidates.jsonl, then again with the index the store kept. Prints the sizes side by side and the
ratio large / small (1.0 = flat; 10 = linear in the run).

Then the same under a review plan (`plan:` rows): two reviewers with overlap 2 (each queue holds every candidate),
ada, who decided the first half, opening her queue (`inject review RUN --reviewer ada`), the plan written after the
run was indexed (its first start indexes the plan's queues alone); and the first start of a copy of the run whose
plan was written before any start (`plan, cold:`, queue and plan's queues indexed together). Last, the adjudicator's
queue (`adjudicate:` rows, `inject review RUN --adjudicate --reviewer judy`): bob reviews ada's half too, disputing
one candidate in 500; judy's start (the index kept) with her first page, and a page.

    python bench/review_scale.py                  # 10k and 100k candidates
    python bench/review_scale.py --sizes 10000,300000
"""
from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from injector.curate.review.assign import PLAN_FILE, make_plan, write_plan
from injector.curate.review.render import render_page
from injector.curate.review.session import ReviewSession, View
from injector.curate.review.store import STORE_FILE, ReviewStore
from injector.util.resources import bundled_taxonomies

STEPS = ["The notebooks cost $4 \\cdot 2.75 = 11$ dollars.", "Her change is $20 - 11 = 9$ dollars.",
         "So she gets $9$ dollars back.\n\n# Answer\n\n9"]
QUESTION = "Maya buys 4 notebooks at $\\$2.75$ each. She pays with a $\\$20$ bill. How much change does she get?"


def record(n: int) -> dict:
    cid, category = f"c{n}::x::0", ("counterfactual", "redundancy")[n % 2]
    return {"original_question": QUESTION, "modified_question": QUESTION, "original_process": STEPS,
            "modified_process": [STEPS[0], f"Her change is $20 - 11 = {n % 7 + 10}$ dollars.", STEPS[2]],
            "modified_steps": [2], "error_steps": [2], "reason": "The subtraction is wrong.", "idx": f"c{n}",
            "question": QUESTION, "classification": category, "id": cid, "category": category,
            "trajectory_id": f"c{n}", "sample": 0, "warnings": [],
            "provenance": {"engine": "offline", "model": "offline", "operator": "change_result"},
            "step_audit": {"steps": 3, "checked_steps": 2, "findings": [], "false_in_error_steps": int(n % 5 == 0)}}


def make_run(directory: Path, size: int) -> Path:
    directory.mkdir(parents=True)
    with (directory / "candidates.jsonl").open("w", encoding="utf-8") as out:
        out.writelines(json.dumps(record(n), separators=(",", ":")) + "\n" for n in range(size))
    manifest = {"config": {"taxonomy_path": str(bundled_taxonomies()["prmbench"])}, "status": "finished"}
    (directory / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    ReviewStore(directory)
    rows = [(f"c{n}::x::0", "accept" if n % 3 else "reject", "" if n % 3 else "not an error", "ada",
             "2026-01-01T00:00:00.000+00:00", "review") for n in range(size // 2)]
    with sqlite3.connect(directory / STORE_FILE) as db:
        db.executemany("INSERT INTO decisions (id, decision, reason, reviewer, time, role) VALUES (?, ?, ?, ?, ?, ?)",
                       rows)
    return directory


def median_ms(work, repeats: int) -> tuple[float, float]:
    """The median wall and CPU milliseconds of `work(n)` for n in range(repeats) (CPU: this process's, SQLite's
    work included; on a loaded machine the wall time also holds the waits for a core)."""
    walls, cpus = [], []
    for n in range(repeats):
        start, cpu = time.perf_counter(), time.process_time()
        work(n)
        walls.append((time.perf_counter() - start) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def measure(directory: Path, size: int, repeats: int, reviewer: str = "bob", queue: bool = False,
            first: int = 100) -> dict[str, float]:
    """The figures of `reviewer` (their plan's queue with `queue`), deciding from candidate half + `first` on."""
    figures: dict[str, float] = {}
    for name in ("start-up + first page", "again, index kept"):  # the second reuses the index the store kept
        start, cpu = time.perf_counter(), time.process_time()
        session = ReviewSession([directory], reviewer=reviewer, queue=queue)
        render_page(session, key=None, view=View(), token="t", nonce="n")
        figures[f"{name} (ms)"] = (time.perf_counter() - start) * 1000
        figures[f"{name}, CPU (ms)"] = (time.process_time() - cpu) * 1000
    middle = size // 2
    pages = {"page": View(), "page, status filter": View(status="unreviewed"),
             "page, category filter": View(cat="redundancy")}
    for name, view in pages.items():
        render_page(session, key=None, view=view, token="t", nonce="n")  # a view's index is made on first use
        figures[f"{name} (ms)"], figures[f"{name}, CPU (ms)"] = median_ms(lambda n: render_page(
            session, key=f"0/c{middle + 1 + 2 * n}::x::0", view=view, token="t", nonce="n"), repeats)

    def decide(n: int) -> None:
        key = f"0/c{middle + first + n}::x::0"
        _ = session.window(View(), key, 0, 1).at(1)  # the next candidate, as the server finds it
        session.decide(key, {"decision": "accept"})
    figures["decision (ms)"], figures["decision, CPU (ms)"] = median_ms(decide, repeats)
    return figures


def cold_start(run: Path, size: int) -> dict[str, float]:
    """ada's first start on a copy of `run` (its plan, its decisions) that was never indexed."""
    copy = make_run(run.parent / f"{size}-cold", size)
    shutil.copy(run / PLAN_FILE, copy / PLAN_FILE)
    start, cpu = time.perf_counter(), time.process_time()
    session = ReviewSession([copy], reviewer="ada", queue=True)
    render_page(session, key=None, view=View(), token="t", nonce="n")
    return {"start-up + first page (ms)": (time.perf_counter() - start) * 1000,
            "start-up + first page, CPU (ms)": (time.process_time() - cpu) * 1000}


def adjudicate(run: Path, size: int, repeats: int) -> dict[str, float]:
    """judy's adjudication queue: bob agrees with ada's first half but on every 500th candidate."""
    from injector.curate.review.adjudicate import to_adjudication

    rows = [(f"c{n}::x::0", "reject" if n % 500 == 1 else ("accept" if n % 3 else "reject"),
             "no" if n % 500 == 1 or not n % 3 else "", "bob", "2026-01-01T00:00:00.000+00:00", "review")
            for n in range(size // 2)]
    with sqlite3.connect(run / STORE_FILE) as db:
        db.executemany("INSERT INTO decisions (id, decision, reason, reviewer, time, role) VALUES (?, ?, ?, ?, ?, ?)",
                       rows)
    start, cpu = time.perf_counter(), time.process_time()
    session = ReviewSession([run], reviewer="judy")
    to_adjudication(session)
    render_page(session, key=None, view=View(), token="t", nonce="n")
    figures = {"start-up + first page (ms)": (time.perf_counter() - start) * 1000,
               "start-up + first page, CPU (ms)": (time.process_time() - cpu) * 1000}
    keys = [entry.key for entry in session.runs[0].entries]
    figures["page (ms)"], figures["page, CPU (ms)"] = median_ms(lambda n: render_page(
        session, key=keys[n % len(keys)], view=View(), token="t", nonce="n"), repeats)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for size in sizes:
            print(f"building {size} candidates...", file=sys.stderr)
            run = make_run(Path(scratch) / str(size), size)
            results[size] = measure(run, size, args.repeats)
            write_plan(run, make_plan([f"c{n}::x::0" for n in range(size)], ["ada", "bob"], overlap=2))
            planned = measure(run, size, args.repeats, reviewer="ada", queue=True, first=100 + args.repeats)
            results[size].update((f"plan: {name}", value) for name, value in planned.items())
            results[size].update((f"plan, cold: {name}", value) for name, value in cold_start(run, size).items())
            judged = adjudicate(run, size, args.repeats)
            results[size].update((f"adjudicate: {name}", value) for name, value in judged.items())
    names = list(results[sizes[0]])
    print(f"{'':42}" + "".join(f"{size:>12,}" for size in sizes) + f"{'ratio':>8}")
    for name in names:
        row = [results[size][name] for size in sizes]
        print(f"{name:42}" + "".join(f"{value:12.1f}" for value in row) + f"{row[-1] / row[0]:8.2f}")


if __name__ == "__main__":
    main()
