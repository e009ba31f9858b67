"""`inject run --batch` while it waits on the provider: Ctrl-C stops the wait at once (exit 130, the batches
recorded); a provider outage is a transient failure (never a final reject); a resume with the provider back
collects the batches already paid for, submitting nothing again and without `--retry-rejects`."""
from __future__ import annotations

import json
from collections import Counter
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from batch_server import BatchServer
from test_batch import GOOD, UNFLAGGED, always_good, read_jsonl, run_cli, write_input

from injector import RunSpec, Taxonomy, load_trajectories, run
from injector.engines import BatchEngine
from injector.engines.batch import read_batch_log

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")


@pytest.fixture
def server():
    server = BatchServer(always_good).start()
    yield server
    server.stop()


def engine(server: BatchServer, out: Path) -> BatchEngine:
    return BatchEngine("openai/scripted", api_base=server.api_base, run_dir=out, poll_seconds=0, backoff_seconds=0,
                       transient_attempts=2, price_in=0, price_out=0)


def test_an_outage_while_waiting_is_transient_and_a_resume_collects_what_was_paid_for(server, tmp_path):
    input_file = write_input(tmp_path, 6)
    out = tmp_path / "run"
    taxonomy = Taxonomy.load()
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["counterfactual"]), out=out, concurrency=100)
    server.down_after_create = True
    run(load_trajectories(input_file), spec, engine(server, out))
    rejects = read_jsonl(out / "rejects.jsonl")
    assert len(rejects) == 6 and {code for r in rejects for code in r["codes"]} == {"transient_failure"}
    assert server.creates == 1 and len(read_batch_log(out).submitted) == 1
    server.down = server.down_after_create = False  # the provider is back
    result = run(load_trajectories(input_file), spec, engine(server, out))
    assert result.progress.accepted == 6
    assert len(read_jsonl(out / "candidates.jsonl")) == 6
    assert server.creates == 1  # collected from the batch already paid for: nothing submitted again


def _wait_for(condition, seconds: float = 120.0) -> None:
    """Poll until `condition()` holds (a guard against a hang, not a timing assertion)."""
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "gave up waiting"
        time.sleep(0.05)


def reasked_when_odd(body: dict) -> str:
    """Odd items' first answers fail validation (re-asked in a second round); everything else is good."""
    item = int(body["messages"][1]["content"].split("(item ")[1].split(")")[0])
    return json.dumps(GOOD if len(body["messages"]) > 2 or item % 2 == 0 else UNFLAGGED)


@pytest.mark.parametrize("stall", [0, 1], ids=["first-round", "re-asks"])
def test_ctrl_c_while_waiting_stops_at_once_with_the_batches_recorded(server, tmp_path, stall):
    input_file = write_input(tmp_path, 6)
    out = tmp_path / "run"
    server.answer, server.stall = reasked_when_odd, stall
    command = [sys.executable, "-c", "from injector.cli import main; main()", "run", "--category", "counterfactual",
               "--input", str(input_file), "--model", "openai/scripted", "--api-base", server.api_base, "--out",
               str(out), "--batch", "--batch-poll-seconds", "0.05", "--price-in", "1", "--price-out", "2"]
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _wait_for(lambda: len(read_batch_log(out).submitted) == stall + 1 or child.poll() is not None)
        _wait_for(lambda: server.batches[f"batch_{stall}"]["status"] == "in_progress" or child.poll() is not None)
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=60)  # before the fix: still polling
    finally:
        child.kill()
    assert child.returncode == 130, stderr.decode()
    assert len(read_batch_log(out).submitted) == stall + 1
    assert read_jsonl(out / "rejects.jsonl") == []  # nothing written off: the units are still in the batch
    server.stall = None
    resumed = run_cli(server, input_file, out)
    assert resumed.exit_code == 0, resumed.output
    assert len(read_jsonl(out / "candidates.jsonl")) == 6 and server.creates == 2  # first asks, re-asks
    assert max(Counter(custom_id for _, custom_id in server.submitted).values()) == 1  # none paid for twice
    assert json.loads((out / "manifest.json").read_text())["status"] == "finished"
