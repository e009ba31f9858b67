"""`inject run --workers N`: the same records as one process, limits that hold in total, and kills, Ctrl-C and
resume that lose and duplicate nothing."""
from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from scripted_server import Reply

from injector.cli.commands import main
from injector.engines.limits import RateLimiter
from injector.runner.shards import shard_of
from injector.runner.executors.processes import shares

QUESTION = "What is $2 + 3$?"
STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
GOOD = json.dumps({"question": None, "reason": "2 + 3 is 5, not 6.",
                   "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.", "error": True}]})
INJECT = [sys.executable, "-c", "from injector.cli.commands import main; main()"]


def write_input(path: Path, count: int) -> Path:
    rows = [{"id": f"t{k:03d}", "question": QUESTION, "steps": [*STEPS[:2], STEPS[2] + "." * k], "answer": "5"}
            for k in range(count)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def llm_args(server, input_file: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--category", "counterfactual", "--input", str(input_file), "--model", "openai/scripted",
            "--api-base", server.api_base, "--out", str(out), "--no-cache", *extra]


def records(out: Path) -> dict[str, dict]:
    """Every record of a run directory by id, provenance time left out; fails on a duplicate or a torn line."""
    found: dict[str, dict] = {}
    for name in ("candidates.jsonl", "rejects.jsonl"):
        path = out / name
        data = path.read_bytes() if path.exists() else b""
        assert not data or data.endswith(b"\n"), f"{name} ends in a half-written line"
        for line in data.splitlines():
            record = json.loads(line)
            record["provenance"].pop("time", None)
            assert record["id"] not in found, f"{record['id']} written twice"
            found[record["id"]] = record
    return found


def test_shards_are_stable_and_shares_add_up():
    assert shard_of("t001::counterfactual::0", 2) == shard_of("t001::counterfactual::0", 2)  # not hash(): salted
    spread = [shard_of(f"t{k:03d}::counterfactual::0", 2) for k in range(200)]
    assert 60 < spread.count(0) < 140  # both workers get work
    assert shares(16, 3) == [6, 5, 5] and shares(2, 2) == [1, 1] and sum(shares(7, 4)) == 7
    limiter = RateLimiter(rpm=600, tpm=90_000).divided(3)
    assert (limiter.rpm, limiter.tpm) == (200, 30_000)
    assert (RateLimiter().divided(2).rpm, RateLimiter().divided(2).tpm) == (None, None)


def test_offline_engine_same_records_as_one_process(tmp_path):
    args = ["run", "--category", "circular_logic", "--category", "redundancy", "--limit", "6"]
    one = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "one")], catch_exceptions=False)
    two = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "two"), "--workers", "2"], catch_exceptions=False)
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    expected = records(tmp_path / "one")
    assert len(expected) == 12 and records(tmp_path / "two") == expected
    manifests = [json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("one", "two")]
    assert manifests[1]["status"] == "finished"
    assert manifests[1]["source"] == manifests[0]["source"] == {"read": 6, "selected": 6, "invalid": 0, "skipped": {}}
    assert manifests[1]["counts"] == manifests[0]["counts"]
    # One summary for the whole run, counting both workers' units.
    summary = lambda output: output[output.index("category "):].replace("/two:", "/one:")  # noqa: E731
    assert summary(two.output) == summary(one.output)


def test_python_api_one_progress_for_the_whole_run(tmp_path):
    from injector import OfflineEngine, RunSpec, Taxonomy, load_trajectories, run
    from injector.engines.offline import WITHDRAWN_OPERATORS
    from injector.runner.executors.processes import WorkerProcesses

    taxonomy = Taxonomy.load()
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy", "circular_logic"]), limit=5,
                   out=tmp_path / "run")
    seen = []
    result = run(load_trajectories(), spec, OfflineEngine(operators=WITHDRAWN_OPERATORS), executor=WorkerProcesses(2),
                 on_progress=lambda progress: seen.append((progress.done, progress.planned)))
    assert result.progress.done == 10 and seen[-1] == (10, 10)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)  # the sum of both workers' counts
    assert result.progress.accepted + result.progress.rejected == 10
    assert sum(c["accepted"] + c["rejected"] for c in result.progress.by_category.values()) == 10


def test_llm_path_same_records_as_one_process_and_resume_skips_everything(scripted_server, tmp_path):
    scripted_server.script = lambda request: GOOD
    input_file = write_input(tmp_path / "in.jsonl", 10)
    one = CliRunner().invoke(main, llm_args(scripted_server, input_file, tmp_path / "one"), catch_exceptions=False)
    sent = len(scripted_server.requests)
    two = CliRunner().invoke(main, llm_args(scripted_server, input_file, tmp_path / "two", "--workers", "2"),
                             catch_exceptions=False)
    assert one.exit_code == 0 and two.exit_code == 0, two.output
    assert sent == 10 and len(scripted_server.requests) == 20  # every unit asked once, by one of the workers
    assert records(tmp_path / "two") == records(tmp_path / "one") and len(records(tmp_path / "one")) == 10
    assert "(10 new, 0 already there)" in two.output
    again = CliRunner().invoke(main, llm_args(scripted_server, input_file, tmp_path / "two", "--workers", "2"),
                               catch_exceptions=False)
    assert again.exit_code == 0 and "(0 new, 10 already there)" in again.output
    assert len(scripted_server.requests) == 20


def test_concurrency_is_divided_so_the_total_holds(scripted_server, tmp_path):
    in_flight, peak, lock = [0], [0], threading.Lock()

    def script(request):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        deadline = time.monotonic() + 1.0  # hold each answer until 4 are in flight (or a second passed)
        while time.monotonic() < deadline and in_flight[0] < 4:
            time.sleep(0.01)
        with lock:
            in_flight[0] -= 1
        return GOOD

    scripted_server.script = script
    input_file = write_input(tmp_path / "in.jsonl", 8)
    result = CliRunner().invoke(main, llm_args(scripted_server, input_file, tmp_path / "run", "--workers", "2",
                                               "--concurrency", "3"), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert peak[0] <= 3  # each worker alone would allow 3: together 6


def test_max_cost_is_divided_so_the_total_holds(scripted_server, tmp_path):
    scripted_server.script = lambda request: GOOD
    input_file = write_input(tmp_path / "in.jsonl", 10)
    # 100 prompt + 50 completion tokens at $10 / $20 per million = $0.002 a request; each worker may spend $0.002.
    result = CliRunner().invoke(main, llm_args(scripted_server, input_file, tmp_path / "run", "--workers", "2",
                                               "--concurrency", "2", "--price-in", "10", "--price-out", "20",
                                               "--max-cost", "0.004"), catch_exceptions=False)
    assert result.exit_code == 3, result.output
    assert "has spent $0.0040 of --max-cost $0.004" in result.output
    assert len(scripted_server.requests) == 2  # one per worker; each alone with the whole budget would send two
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "budget_exceeded" and manifest["totals"]["cost"] == pytest.approx(0.004)


def test_a_bad_input_line_stops_the_run_with_its_file_and_line(tmp_path):
    input_file = write_input(tmp_path / "in.jsonl", 6)
    lines = input_file.read_text().splitlines()
    input_file.write_text("\n".join([*lines[:3], "{not json", *lines[3:]]) + "\n")
    result = CliRunner().invoke(main, ["run", "--category", "redundancy", "--input", str(input_file), "--out",
                                       str(tmp_path / "run"), "--workers", "2"], catch_exceptions=False)
    assert result.exit_code == 2
    assert f"error: {input_file}:4: malformed JSON" in result.output and "Traceback" not in result.output
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "failed" and manifest["source"]["read"] == 4


def test_more_workers_than_concurrency_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(main, ["run", "--category", "redundancy", "--workers", "3", "--concurrency", "2",
                                       "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "--workers 3 needs --concurrency 3 or more" in result.output


# ------------------------------------------------------------------------------------------ kills and Ctrl-C

def slow(seconds: float):
    def script(request):
        time.sleep(seconds)
        return Reply(content=GOOD)
    return script


def start(server, input_file: Path, out: Path, tmp_path: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    return subprocess.Popen([*INJECT, *llm_args(server, input_file, out, "--workers", "2", "--concurrency", "2",
                                                *extra)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def wait_for_lines(out: Path, count: int, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    path = out / "candidates.jsonl"
    while not (path.exists() and path.read_bytes().count(b"\n") >= count):
        assert process.poll() is None, process.stdout.read().decode()
        assert time.monotonic() < deadline, "the run wrote nothing"
        time.sleep(0.05)


def workers_of(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def wait_until_unlocked(out: Path, timeout: float = 60) -> None:
    """The run lock is free: every process of the killed run is gone."""
    deadline = time.monotonic() + timeout
    with (out / ".lock").open("w") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle, fcntl.LOCK_UN)
                return
            except OSError:
                assert time.monotonic() < deadline, "processes of the killed run are still alive"
                time.sleep(0.05)


def finish_and_count(server, input_file: Path, out: Path, tmp_path: Path, units: int) -> None:
    """Run the same command again to the end: every unit written exactly once, as a candidate."""
    server.script = lambda request: GOOD
    rerun = start(server, input_file, out, tmp_path)
    output = rerun.communicate(timeout=300)[0].decode()
    assert rerun.returncode == 0, output
    assert sorted(records(out)) == [f"t{k:03d}::counterfactual::0" for k in range(units)]
    assert all(record["codes"] == [] for record in records(out).values() if "codes" in record)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for the worker processes")
def test_a_killed_worker_stops_the_run_and_a_rerun_loses_and_duplicates_nothing(scripted_server, tmp_path):
    scripted_server.script = slow(0.1)
    input_file = write_input(tmp_path / "in.jsonl", 40)
    out = tmp_path / "run"
    process = start(scripted_server, input_file, out, tmp_path)
    wait_for_lines(out, 4, process)
    os.kill(workers_of(process.pid)[0], signal.SIGKILL)
    output = process.communicate(timeout=120)[0].decode()
    assert process.returncode == 5, output  # resumable (docs/exit-codes.md), not an internal error
    assert "was killed by SIGKILL; nothing written is lost: run the same command again to continue" in output
    assert json.loads((out / "manifest.json").read_text())["status"] == "failed"
    assert 4 <= len(records(out)) < 40
    finish_and_count(scripted_server, input_file, out, tmp_path, 40)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the workers die with the parent on Linux only")
def test_a_killed_parent_takes_its_workers_and_a_rerun_loses_and_duplicates_nothing(scripted_server, tmp_path):
    scripted_server.script = slow(0.1)
    input_file = write_input(tmp_path / "in.jsonl", 40)
    out = tmp_path / "run"
    process = start(scripted_server, input_file, out, tmp_path)
    wait_for_lines(out, 4, process)
    workers = workers_of(process.pid)
    process.kill()
    process.communicate(timeout=60)
    wait_until_unlocked(out)
    # The parent-death signal is delivered asynchronously: a worker may still be exiting when the lock is free.
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in workers)
    written = len(records(out))
    assert 4 <= written < 40
    finish_and_count(scripted_server, input_file, out, tmp_path, 40)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (not gone, not a zombie waiting to be reaped)."""
    try:
        return "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False


def test_ctrl_c_exits_130_with_whole_lines_and_a_rerun_completes(scripted_server, tmp_path):
    scripted_server.script = slow(0.1)
    input_file = write_input(tmp_path / "in.jsonl", 40)
    out = tmp_path / "run"
    process = start(scripted_server, input_file, out, tmp_path)
    wait_for_lines(out, 4, process)
    os.killpg(process.pid, signal.SIGINT)  # as a terminal does: to the whole process group, workers included
    output = process.communicate(timeout=120)[0].decode()
    assert process.returncode == 130, output
    assert "interrupted; nothing written is lost. Resume with: inject run" in output
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    assert 4 <= len(records(out)) < 40  # records() fails on a half-written line
    finish_and_count(scripted_server, input_file, out, tmp_path, 40)
