"""`inject run --executor ray`: the same units, the same records as the local loop, on Ray workers (one Ray session
of 2 CPUs shared by the module); a worker killed mid-run loses and duplicates nothing; limits divided among workers.

The tests that need Ray are skipped, with the reason, when it is not installed (`pip install -e ".[test,ray]"`).
"""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from injector import RunSpec, Taxonomy, load_trajectories, run
from injector.cli.commands import main
from injector.engines import from_model
from injector.util.errors import BudgetExceeded, InjectorError, UserError
from injector.engines.limits import RateLimiter
from injector.runner.executors.ray_actors import RayExecutor, WorkerEngine, WorkerLost, require_ray, sees_run_directory
from injector.records.directory import RunDirectory
from injector.runner.shards import shard_of
from scripted_server import Reply

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from fake_provider import as_edits, parse_prompt, undeclared_edits, valid_answer  # noqa: E402

SAMPLE = ROOT / "data" / "sample.jsonl"
OFFLINE_CATEGORIES = ["redundancy", "circular_logic"]  # what the offline engine offers
MODEL = "openai/scripted"

needs_ray = pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("ray") is None,
    reason="Ray is not installed (pip install -e '.[test,ray]'); the Ray executor cannot run")


@pytest.fixture(scope="module")
def ray_session():
    """One local Ray session of 2 CPUs for the whole module (starting Ray takes several seconds)."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    import ray

    # address="local": a session of its own, never a cluster another run on this machine started (`ray start`).
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False, namespace="prm-injector",
             logging_level="ERROR")
    yield ray
    ray.shutdown()


# ------------------------------------------------------------------------------------------ pure parts, no Ray

def test_shards_are_a_stable_hash_of_the_unit_id():
    # Pinned: another process, another machine, a later release must put a unit on the same shard.
    assert [shard_of(f"t{k}::counterfactual::0", 4) for k in range(8)] == [1, 1, 3, 0, 2, 2, 1, 1]
    digest = hashlib.blake2b(b"t1::counterfactual::0", digest_size=8).digest()
    assert shard_of("t1::counterfactual::0", 7) == int.from_bytes(digest, "big") % 7
    counts = Counter(shard_of(f"traj-{k}::redundancy::{k % 3}", 4) for k in range(4000))
    assert sorted(counts) == [0, 1, 2, 3] and min(counts.values()) > 800  # about 1,000 each
    with pytest.raises(ValueError):
        shard_of("x", 0)


def test_a_worker_sees_the_run_directory_only_while_the_run_holds_it(tmp_path):
    run_dir = RunDirectory(tmp_path / "run")
    assert not sees_run_directory(run_dir.path)  # no directory
    run_dir.prepare("abc")
    assert sees_run_directory(run_dir.path)  # the run lock is held: the same directory
    run_dir.release()
    assert not sees_run_directory(run_dir.path)  # a directory no run holds (a copy): the driver appends
    open_files = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        sees_run_directory(run_dir.path)
    assert len(os.listdir("/proc/self/fd")) == open_files  # the probe closes what it opens


def test_worker_engines_share_the_rate_limits():
    engine = WorkerEngine(MODEL, {"api_base": "http://127.0.0.1:9/v1", "rpm": 300, "tpm": 90000,
                                  "use_cache": False})(3)
    limiter: RateLimiter = engine.limiter  # type: ignore[attr-defined]
    assert limiter._requests is not None and limiter._requests.time_period == pytest.approx(60 / 100)
    assert limiter._token_capacity == pytest.approx(30000 * 10 / 60)  # 30,000 tpm in 10 s slices
    assert engine.describe() == from_model(MODEL, api_base="http://127.0.0.1:9/v1", use_cache=False).describe()


def test_missing_ray_is_one_line_and_exit_2(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` sees when Ray is not installed
    with pytest.raises(UserError, match=r"pip install 'prm-injector\[ray\]'"):
        require_ray()
    result = CliRunner().invoke(main, ["run", "--category", "redundancy", "--limit", "1", "--executor", "ray",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "error: --executor ray needs Ray, which is not installed: pip install 'prm-injector[ray]'")
    assert not (tmp_path / "run").exists()  # refused before anything was written


def test_inject_help_does_not_import_ray():
    code = ("import sys; from injector.cli.commands import main\ntry:\n    main(['run', '--help'])\nexcept SystemExit:\n"
            "    pass\nassert 'ray' not in sys.modules, 'ray imported'")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)


# ------------------------------------------------------------------------------------------ helpers

def spec_for(out: Path, categories: list[str], *, limit: int, samples: int, **options: Any) -> RunSpec:
    taxonomy = Taxonomy.load()
    return RunSpec(taxonomy=taxonomy, categories=taxonomy.select(categories), limit=limit, samples=samples, out=out,
                   **options)


def outcomes(out: Path) -> dict[str, tuple[str, dict]]:
    """Unit id -> (file, record without the time and attempt provenance); fails on a unit written twice."""
    records: dict[str, tuple[str, dict]] = {}
    for name in ("candidates.jsonl", "rejects.jsonl"):
        path = out / name
        for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
            record = json.loads(line)
            for key in ("time", "attempts"):
                record["provenance"].pop(key, None)
            assert record["id"] not in records, f"{record['id']} written twice"
            records[record["id"]] = (name, record)
    return records


def line_ids(out: Path) -> Counter[str]:
    ids: Counter[str] = Counter()
    for name in ("candidates.jsonl", "rejects.jsonl"):
        path = out / name
        if path.exists():
            ids.update(json.loads(line)["id"] for line in path.read_text(encoding="utf-8").splitlines())
    return ids


def answer(body: dict) -> Reply:
    """A valid edit-form injection of the trajectory in the prompt, except first attempts at one trajectory in
    five (by its question), which declare no error step and are re-asked with the validator's messages."""
    question, steps, _ = parse_prompt(body)
    first_attempt = len(body["messages"]) <= 2
    if first_attempt and int(hashlib.sha256(question.encode()).hexdigest(), 16) % 5 == 0:
        return Reply(content=json.dumps(undeclared_edits(question, steps)))
    return Reply(content=json.dumps(as_edits(valid_answer(question, steps), steps)))


def llm_engine(server, **options: Any):
    return from_model(MODEL, api_base=server.api_base, use_cache=False, **options)


def ray_executor(server=None, **options: Any) -> RayExecutor:
    engine_options: dict[str, Any] = {"api_base": server.api_base, "use_cache": False} if server else {}
    for key in ("price_in", "price_out"):
        if key in options:
            engine_options[key] = options.pop(key)
    return RayExecutor(WorkerEngine(MODEL if server else "offline", engine_options), workers=2, **options)


# ------------------------------------------------------------------------------------------ with Ray

@needs_ray
def test_offline_500_units_same_ids_and_payloads_as_the_local_loop(ray_session, tmp_path):
    spec = dict(categories=OFFLINE_CATEGORIES, limit=25, samples=10)
    local = run(load_trajectories(SAMPLE), spec_for(tmp_path / "local", **spec), from_model("offline"))
    executor = ray_executor()
    spread = run(load_trajectories(SAMPLE), spec_for(tmp_path / "ray", **spec), from_model("offline"),
                 executor=executor)
    expected = outcomes(tmp_path / "local")
    assert len(expected) == 500 and local.progress.done == 500
    assert outcomes(tmp_path / "ray") == expected
    assert spread.progress.done == 500 and spread.progress.accepted == local.progress.accepted
    assert executor.last_run.workers == 2 and executor.last_run.restarts == 0
    assert spread.manifest.config_hash == local.manifest.config_hash  # either executor resumes either's run


@needs_ray
def test_scripted_server_500_units_same_ids_and_payloads_as_the_local_loop(ray_session, tmp_path, scripted_server):
    scripted_server.script = answer
    spec = dict(categories=["counterfactual"], limit=25, samples=20, concurrency=8)
    run(load_trajectories(SAMPLE), spec_for(tmp_path / "local", **spec), llm_engine(scripted_server))
    local_requests = len(scripted_server.requests)
    spread = run(load_trajectories(SAMPLE), spec_for(tmp_path / "ray", **spec), llm_engine(scripted_server),
                 executor=ray_executor(scripted_server))
    expected = outcomes(tmp_path / "local")
    assert len(expected) == 500
    assert outcomes(tmp_path / "ray") == expected
    assert len(scripted_server.requests) == 2 * local_requests > 500  # the same requests, re-asks included
    assert spread.progress.prompt_tokens == 100 * local_requests  # usage counted by the driver


@needs_ray
def test_records_returned_to_the_driver_when_workers_do_not_append(ray_session, tmp_path):
    spec = dict(categories=OFFLINE_CATEGORIES, limit=12, samples=1)
    run(load_trajectories(SAMPLE), spec_for(tmp_path / "local", **spec), from_model("offline"))
    run(load_trajectories(SAMPLE), spec_for(tmp_path / "ray", **spec), from_model("offline"),
        executor=ray_executor(append_in_workers=False))
    assert outcomes(tmp_path / "ray") == outcomes(tmp_path / "local")


def kill_a_worker_at(server, ray, executor: RayExecutor, count: int, killed: list[int]):
    """A server script that answers like `answer`, and SIGKILLs the process of the run's first Ray worker when the
    `count`-th request comes in (the worker is mid-run: it has requests in flight)."""
    lock = threading.Lock()
    seen = [0]

    def script(body: dict) -> Reply:
        with lock:
            seen[0] += 1
            kill = seen[0] == count
        if kill:
            worker = ray.get_actor(f"inject-{executor.last_run.token}-0-0", namespace="prm-injector")
            pid = ray.get(worker.pid.remote())
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        return answer(body)

    server.script = script


@needs_ray
def test_a_worker_killed_mid_run_is_replaced_and_nothing_is_lost_or_written_twice(ray_session, tmp_path,
                                                                                 scripted_server):
    killed: list[int] = []
    executor = ray_executor(scripted_server)
    kill_a_worker_at(scripted_server, ray_session, executor, 30, killed)
    spec = spec_for(tmp_path / "run", ["counterfactual"], limit=25, samples=4, concurrency=8)
    result = run(load_trajectories(SAMPLE), spec, llm_engine(scripted_server), executor=executor)
    assert killed and executor.last_run.restarts == 1
    ids = line_ids(tmp_path / "run")
    assert len(ids) == 100 and max(ids.values()) == 1  # 0 lost, 0 duplicates
    assert result.manifest.counts.candidates + result.manifest.counts.rejects == 100
    again = run(load_trajectories(SAMPLE), spec, llm_engine(scripted_server), executor=ray_executor(scripted_server))
    assert again.progress.done == 0 and again.progress.skipped_existing == 100
    assert line_ids(tmp_path / "run") == ids


@needs_ray
def test_a_killed_worker_without_replacements_stops_the_run_and_a_local_rerun_finishes_it(ray_session, tmp_path,
                                                                                         scripted_server):
    killed: list[int] = []
    executor = ray_executor(scripted_server, worker_restarts=0)
    kill_a_worker_at(scripted_server, ray_session, executor, 30, killed)
    spec = spec_for(tmp_path / "run", ["counterfactual"], limit=25, samples=4, concurrency=8)
    with pytest.raises(WorkerLost, match="run the same command again"):
        run(load_trajectories(SAMPLE), spec, llm_engine(scripted_server), executor=executor)
    assert killed
    before = line_ids(tmp_path / "run")
    assert 0 < len(before) < 100 and max(before.values()) == 1
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "failed"
    result = run(load_trajectories(SAMPLE), spec, llm_engine(scripted_server))  # the local loop resumes it
    ids = line_ids(tmp_path / "run")
    assert result.progress.done == 100 - len(before)
    assert len(ids) == 100 and max(ids.values()) == 1  # 0 lost, 0 duplicates


@needs_ray
def test_the_budget_is_divided_among_workers_and_the_total_holds(ray_session, tmp_path, scripted_server):
    scripted_server.script = lambda body: Reply(content=json.dumps(as_edits(valid_answer(*parse_prompt(body)[:2]),
                                                                            parse_prompt(body)[1])))
    # 100 prompt + 50 completion tokens a request at $10 / $20 per million: $0.002 a request.
    prices = dict(price_in=10.0, price_out=20.0)
    spec = spec_for(tmp_path / "run", ["counterfactual"], limit=25, samples=8, concurrency=4, max_cost=0.05)
    with pytest.raises(BudgetExceeded, match="raise the cap to continue"):
        run(load_trajectories(SAMPLE), spec, llm_engine(scripted_server, **prices),
            executor=ray_executor(scripted_server, **prices))
    spent = 0.002 * len(scripted_server.requests)
    # Each worker starts a unit only while its $0.025 can hold it (the largest unit so far reserved for each unit
    # in flight): the total never passes $0.05, and stops short of it by less than a unit a worker.
    assert 0.05 - 2 * 0.002 - 1e-9 <= spent <= 0.05 + 1e-9
    assert len(line_ids(tmp_path / "run")) == len(scripted_server.requests) < 200


@needs_ray
def test_cli_executor_ray_and_a_local_rerun_agree(ray_session, tmp_path):
    out = tmp_path / "run"
    args = ["run", "--category", "redundancy", "--category", "circular_logic", "--limit", "10", "--out", str(out)]
    result = CliRunner().invoke(main, [*args, "--executor", "ray", "--ray-workers", "2"])
    assert result.exit_code == 0, result.output
    assert "ray: 2 workers on 1 node, 0 replaced" in result.output
    assert "20 new, 0 already there" in result.output
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert "0 new, 20 already there" in again.output


@needs_ray
def test_a_hook_loaded_before_the_run_runs_on_the_workers(ray_session, tmp_path, scripted_server):
    # The hook's module exists only in this process (imported from the taxonomy's directory); its check must still
    # reject the first answer on the worker and feed the re-ask.
    from test_taxonomy import TEMPLATE, TRAJECTORY, WRONG, hook_taxonomy

    taxonomy = hook_taxonomy(tmp_path, TEMPLATE)
    category = taxonomy.category("unit_slip")
    assert category.loaded_hook() is not None
    scripted_server.script = lambda body: json.dumps(
        {"question": None, "reason": "r",
         "edits": [WRONG if len(body["messages"]) <= 2 else dict(WRONG, text="Then $x + 3 = 5$ cents.")]})
    spec = RunSpec(taxonomy=taxonomy, categories=[category], samples=4, out=tmp_path / "run")
    result = run([TRAJECTORY], spec, llm_engine(scripted_server), executor=ray_executor(scripted_server))
    assert result.progress.accepted == 4
    lines = (tmp_path / "run" / "candidates.jsonl").read_text().splitlines()
    attempts = [json.loads(line)["provenance"]["attempts"] for line in lines]
    assert attempts == [[{"codes": ["no_unit_slip"]}, {"codes": []}]] * 4


@needs_ray
def test_an_unreachable_ray_address_is_one_line_and_exit_2(ray_session, monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise ConnectionError("Could not find any running Ray instance. Please specify the one to connect to")

    monkeypatch.setattr(ray_session, "is_initialized", lambda: False)
    monkeypatch.setattr(ray_session, "init", refuse)
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.9:6379")
    result = CliRunner().invoke(main, ["run", "--category", "redundancy", "--limit", "1", "--executor", "ray",
                                       "--out", str(tmp_path / "run")])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == (
        "error: cannot start or reach the Ray cluster at RAY_ADDRESS=10.0.0.9:6379 (Could not find any running Ray "
        "instance. Please specify the one to connect to); check it with `ray status`, or unset RAY_ADDRESS to start "
        "a local one; run the same command again to continue")


@needs_ray
def test_a_worker_that_cannot_start_its_engine_stops_the_run_with_that_error(ray_session, tmp_path, scripted_server):
    # The worker's engine must be the run's: one built with another temperature would write records of another run.
    scripted_server.script = answer
    other = RayExecutor(WorkerEngine(MODEL, {"api_base": scripted_server.api_base, "use_cache": False,
                                             "temperature": 0.5}), workers=2)
    spec = spec_for(tmp_path / "run", ["counterfactual"], limit=4, samples=1)
    with pytest.raises(InjectorError, match="a Ray worker built a different engine") as raised:
        run(load_trajectories(SAMPLE), spec, llm_engine(scripted_server), executor=other)
    assert raised.value.exit_code == 2
    assert line_ids(tmp_path / "run") == Counter() and scripted_server.requests == []
