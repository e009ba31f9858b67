"""SIGKILL of the `inject run --executor ray` driver (issue 24, item 11): its workers write nothing more to the run
directory, even once a resume holds it again; the local Ray cluster the run started is gone, processes included
(its agents ignore SIGTERM); and a resume loses and duplicates nothing.

Skipped, with the reason, when Ray is not installed. The run is a real `inject run` subprocess with its own local
Ray session (`address="local"`), against the scripted server answering slowly, so the kill lands mid-run.
"""
from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector import RunSpec, Taxonomy, load_trajectories
from injector.cli.commands import main
from injector.engines import from_model
from injector.records.directory import RunDirectory
from injector.runner.executors.ray_driver import DriverIdentity, driver_holds_run, start_ticks
from injector.runner.executors.ray_watchdog import session_processes
from injector.runner.executors.ray_worker import DRIVER_GONE, ShardWorker, WorkerJob
from scripted_server import Reply, ScriptedServer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from fake_provider import as_edits, parse_prompt, valid_answer  # noqa: E402

needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed (pip install -e '.[test,ray]'); the Ray executor cannot run")
UNITS = 60
SLOW_REPLY = 0.4
"""Seconds the server takes to answer during the killed run: the workers are mid-request at the kill."""
FILES = ("candidates.jsonl", "rejects.jsonl")


def line_ids(out: Path) -> Counter[str]:
    ids: Counter[str] = Counter()
    for name in FILES:
        path = out / name
        if path.exists():
            ids.update(json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines())
    return ids


def sizes(out: Path) -> tuple[int, ...]:
    return tuple((out / name).stat().st_size if (out / name).exists() else 0 for name in FILES)


def wait_for(condition, seconds: float, what: str) -> None:
    """Poll `condition` until it holds; fail naming `what` after `seconds` (a bound, not a speed requirement)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.2)


def watchdog_session(driver_pid: int) -> str:
    """The session directory of the driver's local Ray cluster, read from its watchdog's command line."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"injector.runner.executors.ray_watchdog" in argv and len(argv) > 3:
            return argv[3].decode()
    return ""


def test_a_dead_driver_is_told_apart_from_a_resume_holding_the_lock(tmp_path):
    run_dir = RunDirectory(tmp_path / "run")
    run_dir.prepare("abc")  # a run holds the directory: this process, alive
    assert driver_holds_run(run_dir.path, DriverIdentity.of_this_process())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    dead = DriverIdentity(DriverIdentity.of_this_process().boot, child.pid, start_ticks(child.pid) or -1)
    child.wait()
    assert dead.alive() is False
    assert not driver_holds_run(run_dir.path, dead)  # the lock is held, by someone else: a resume
    assert not driver_holds_run(run_dir.path, dead, lock_required=False)
    elsewhere = DriverIdentity("another-machine", child.pid, 1)
    assert elsewhere.alive() is None and driver_holds_run(run_dir.path, elsewhere)  # only the lock can tell
    run_dir.release()
    assert not driver_holds_run(run_dir.path, DriverIdentity.of_this_process())


def test_a_worker_whose_driver_died_appends_nothing_though_a_resume_holds_the_lock(tmp_path):
    # The worker's own code, without Ray: the check before each append.
    taxonomy = Taxonomy.load()
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["redundancy"]), out=tmp_path / "run")
    trajectory = next(iter(load_trajectories(ROOT / "data" / "sample.jsonl")))
    resume = RunDirectory(tmp_path / "run")
    resume.prepare("abc")  # the run lock is held, by a resume: not by the worker's driver
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    dead = DriverIdentity(DriverIdentity.of_this_process().boot, child.pid, start_ticks(child.pid) or -1)
    child.wait()

    def one_unit(driver: DriverIdentity, sample: int):
        job = WorkerJob(spec=spec, make_engine=lambda workers: from_model("offline"), workers=1, concurrency=1,
                        budget=None, run_path=str(resume.path), config_hash="abc", engine_description={},
                        driver=driver)
        worker = ShardWorker(job)
        worker._slots, worker.engine, worker.run_dir = asyncio.Semaphore(1), from_model("offline"), RunDirectory(
            resume.path)
        return worker, asyncio.run(worker._one((trajectory, "redundancy", sample, True)))

    worker, record = one_unit(dead, 0)
    assert record is None and worker.failure == (DRIVER_GONE, 1)
    assert line_ids(resume.path) == Counter()  # nothing written beside the resume
    worker, record = one_unit(DriverIdentity.of_this_process(), 1)
    assert record is not None and worker.failure is None
    assert line_ids(resume.path) == Counter({record.id: 1})
    resume.release()


@needs_ray
def test_sigkill_of_the_driver_stops_its_workers_and_its_cluster_and_a_resume_finishes(tmp_path):
    server = ScriptedServer().start()
    slow = [True]

    def script(body: dict) -> Reply:
        if slow[0]:
            time.sleep(SLOW_REPLY)
        question, steps, _ = parse_prompt(body)
        return Reply(content=json.dumps(as_edits(valid_answer(question, steps), steps)))

    server.script = script
    out = tmp_path / "run"
    args = ["run", "--input", str(ROOT / "data" / "sample.jsonl"), "--category", "counterfactual", "--limit", "15",
            "--samples", "4", "--model", "openai/scripted", "--api-base", server.api_base, "--no-cache",
            "--concurrency", "4", "--out", str(out)]
    env = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    env.update(INJECT_CLIENT="openai", OPENAI_API_KEY="sk-test", RAY_USAGE_STATS_ENABLED="0")
    command = [sys.executable, "-c", "from injector.cli import main; main()", *args, "--executor", "ray",
               "--ray-workers", "2"]
    log = tmp_path / "driver.log"  # a file, not a pipe: a full pipe would stall the driver
    with log.open("wb") as log_file:
        driver = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=log_file, stderr=subprocess.STDOUT,
                                  start_new_session=True)
    try:
        wait_for(lambda: len(line_ids(out)) >= 4 or driver.poll() is not None, 180, "the first records")
        assert driver.poll() is None, log.read_text(errors="replace")[-2000:]
        session_dir = watchdog_session(driver.pid)
        assert session_dir, "the run started no watchdog for its local Ray cluster"
        cluster = session_processes(session_dir, {os.getpid()})
        assert len(cluster) >= 3  # GCS, raylet, workers, agents
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        # A resume takes the run lock at once: the dead driver's workers must not take it for their driver's.
        resume_lock = RunDirectory(out)
        manifest = resume_lock.read_manifest()
        assert manifest is not None
        resume_lock.prepare(manifest.config_hash)
        time.sleep(1.5)  # grace: a write already under way may end
        after_grace = sizes(out)
        time.sleep(2 * SLOW_REPLY + 1.5)  # several slow answers' worth: a live worker would have appended
        assert sizes(out) == after_grace, "the dead driver's workers kept writing beside the resume"
        resume_lock.release()

        def cluster_gone() -> bool:
            left = {pid for pid, started in cluster.items() if start_ticks(pid) == started}
            return not left and not session_processes(session_dir, {os.getpid()})

        wait_for(cluster_gone, 60, "the Ray session's processes to end")
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        slow[0] = False
    try:
        before = line_ids(out)
        assert 0 < len(before) < UNITS and max(before.values()) == 1
        resumed = CliRunner().invoke(main, args, env={"INJECT_CLIENT": "openai", "OPENAI_API_KEY": "sk-test"})
        assert resumed.exit_code == 0, resumed.output
        ids = line_ids(out)
        assert len(ids) == UNITS and max(ids.values()) == 1  # 0 lost, 0 duplicated
    finally:
        server.stop()
