"""What the step audit adds to an offline `inject run`: the same run with and without it (`RunSpec.candidate_audit`,
which the CLI sets to the step audit), each its own process, side by side: CPU s (user + system of the run and its
waited-for children, the sympy worker included), wall s, candidates written, and the audit's share.

Inputs as bench/scale.py makes them (the 401 real PRM800K solutions behind PRMBench's train-phase-1 files, copy k
with every integer shifted by k, so no relation repeats and the audit's caches do not flatter it). Units =
trajectories x the offline engine's categories. On these sources the offline engine finds an applicable edit for
few units (~5 % end as candidates, the rest `not_applicable`), so a 10k-candidate offline run would need ~200k
trajectories; the audit's cost grows with candidates and the run's with units, so the overhead's ratio is the same
at any size past start-up, and the bench also prints it for a run where every unit is a candidate (the worst case).

    python bench/step_audit_overhead.py                    # 800 trajectories, ~4,000 units
    python bench/step_audit_overhead.py --trajectories 2000 --rounds 1   # 10,000 units
    python bench/step_audit_overhead.py --trajectories 300 --rounds 1
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from scale import ENV, make_input  # noqa: E402

CHILD = """
import sys
from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
from injector.triage.step_audit.hooks import audit_on_write
taxonomy = Taxonomy.load()
spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.categories, out=sys.argv[2],
               candidate_audit=audit_on_write if sys.argv[3] == "audit" else None)
run(load_trajectories(sys.argv[1], "trajectories"), spec, OfflineEngine())
"""


def one_run(input_path: Path, out: Path, mode: str) -> dict[str, float]:
    start = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", CHILD, str(input_path), str(out), mode], env=ENV,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{mode} run failed: {(process.stderr.read() if process.stderr else '')[-500:]}")
    lines = (out / "candidates.jsonl").read_text().splitlines()
    flagged = sum(bool((json.loads(line).get("step_audit") or {}).get("findings")) for line in lines)
    rejects = sum(1 for _ in (out / "rejects.jsonl").open("rb")) if (out / "rejects.jsonl").exists() else 0
    return {"cpu": usage.ru_utime + usage.ru_stime, "wall": time.perf_counter() - start,
            "candidates": len(lines), "flagged": flagged, "units": len(lines) + rejects}


def start_up_cpu(work: Path) -> float:
    """CPU of the same run over one trajectory: imports and set-up, subtracted to compare per unit."""
    return one_run(make_input(work / "one.jsonl", 1), work / "run-one", "plain")["cpu"]


AUDIT_ALONE = """
import sys, time
from injector.records.directory import Candidate, read_records
from injector.triage.step_audit.audit import default_worker
from injector.triage.step_audit.hooks import audit_on_write
from pathlib import Path
candidates = [c for _, c in read_records(Path(sys.argv[1]), Candidate)]
start = time.process_time()
for candidate in candidates:
    audit_on_write(candidate)
print(time.process_time() - start + default_worker().cpu_seconds(), len(candidates))
"""


def audit_alone(run_dir: Path) -> tuple[float, int]:
    """CPU s of auditing every candidate of a run in a fresh process (the sympy worker's CPU included)."""
    found = subprocess.run([sys.executable, "-c", AUDIT_ALONE, str(run_dir / "candidates.jsonl")], env=ENV,
                           capture_output=True, text=True, check=True).stdout.split()
    return float(found[0]), int(found[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=2, help="Interleaved rounds (a shared machine's noise hits "
                        "both alike); the lowest CPU of each kept.")
    parser.add_argument("--keep", type=Path, help="Keep the inputs and runs here.")
    args = parser.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="audit-overhead-"))
    work.mkdir(parents=True, exist_ok=True)
    input_path = make_input(work / "input.jsonl", args.trajectories)
    results: dict[str, list[dict[str, float]]] = {"plain": [], "audit": []}
    for round_number in range(args.rounds):
        for mode in ("plain", "audit"):
            figures = one_run(input_path, work / f"run-{mode}-{round_number}", mode)
            results[mode].append(figures)
            print(f"round {round_number + 1} {mode:5}: CPU {figures['cpu']:.1f} s, wall {figures['wall']:.1f} s, "
                  f"{figures['candidates']:.0f} candidates, {figures['flagged']:.0f} flagged", flush=True)
        plain_cpu, audit_cpu = results["plain"][-1]["cpu"], results["audit"][-1]["cpu"]
        print(f"round {round_number + 1}: with audit / without = {audit_cpu / plain_cpu:.3f} "
              f"(the audit adds {100 * (audit_cpu / plain_cpu - 1):+.1f} % CPU; goal <= +15 %)", flush=True)
    plain = min(results["plain"], key=lambda f: f["cpu"])
    audit = min(results["audit"], key=lambda f: f["cpu"])
    print(f"\n{'':22} {'without audit':>14} {'with audit':>11}")
    print(f"{'CPU s (lowest)':22} {plain['cpu']:>14.1f} {audit['cpu']:>11.1f}")
    print(f"{'wall s':22} {plain['wall']:>14.1f} {audit['wall']:>11.1f}")
    print(f"{'candidates':22} {plain['candidates']:>14.0f} {audit['candidates']:>11.0f}")
    print(f"{'units':22} {plain['units']:>14.0f} {audit['units']:>11.0f}")
    start = start_up_cpu(work)
    added = audit["cpu"] - plain["cpu"]
    alone, audited = audit_alone(work / "run-plain-0")
    per_candidate, per_unit = alone / audited, (plain["cpu"] - start) / plain["units"]
    per_run_candidate = (plain["cpu"] - start) / plain["candidates"]
    print(f"start-up CPU (the same run over one trajectory) {start:.1f} s")
    print(f"two runs: the audit adds {100 * added / plain['cpu']:.1f} % to this run's CPU "
          f"({100 * added / (plain['cpu'] - start):.1f} % past start-up)")
    print(f"the audit alone on the {audited} candidates: {alone:.2f} CPU s, {1000 * per_candidate:.2f} ms per candidate; "
          f"the run: {1000 * per_unit:.2f} ms per unit, {1000 * per_run_candidate:.1f} ms per candidate written")
    print(f"overhead at this run's yield: {100 * per_candidate / per_run_candidate:.1f} %; if every unit were a "
          f"candidate: {100 * per_candidate / per_unit:.1f} %; goal ≤ 15 %")


if __name__ == "__main__":
    main()
