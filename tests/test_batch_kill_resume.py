"""`inject run --batch` SIGKILLed ten times at random moments (seeded), each kill followed by the same command,
then run to the end (issue 24, "Done when"): every unit ends exactly once in candidates.jsonl or rejects.jsonl,
and no request is in two batches the provider made (each of which a real provider would run and bill)."""
from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest
from batch_server import BatchServer
from forked_cli import ForkedCli
from test_batch import GOOD, UNFLAGGED, read_jsonl, write_input

from injector.engines.batch import read_batch_log

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGKILL")

SEED = 24
KILLS = 10
SOURCES = 8
CATEGORIES = ("counterfactual", "step_contradiction")


def answer(body: dict) -> str:
    """Odd items' first answers fail validation (a re-ask, the next round); item 3 never passes (a reject)."""
    item = int(body["messages"][1]["content"].split("(item ")[1].split(")")[0])
    asked_again = len(body["messages"]) > 2
    return json.dumps(GOOD if item != 3 and (asked_again or item % 2 == 0) else UNFLAGGED)


def arguments(server: BatchServer, input_file: Path, out: Path) -> list[str]:
    categories = [arg for category in CATEGORIES for arg in ("--category", category)]
    return ["run", *categories, "--input", str(input_file), "--model", "openai/scripted", "--api-base",
            server.api_base, "--out", str(out), "--batch", "--batch-poll-seconds", "0.05", "--batch-max-requests", "3",
            "--max-attempts", "2", "--price-in", "1", "--price-out", "2"]


def _until(condition: Callable[[], bool], seconds: float = 300.0) -> None:
    """Poll until `condition()` holds (a guard against a hang, not a timing assertion)."""
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "gave up waiting"
        time.sleep(0.005)


def test_ten_sigkills_at_random_moments_lose_nothing_duplicate_nothing_and_pay_no_batch_twice(tmp_path):
    server = BatchServer(answer).start()
    server.create_delay = 0.2  # a create answers late: kills land between "the provider made it" and "recorded"
    input_file, out = write_input(tmp_path, SOURCES), tmp_path / "run"
    cli = ForkedCli({**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"})
    rng = random.Random(SEED)
    kills = invocations = 0
    try:
        while kills < KILLS:
            invocations += 1
            assert invocations <= 3 * KILLS, f"the run finished after {kills} kills: give it more work"
            pid = cli.start(arguments(server, input_file, out), tmp_path / f"stderr{invocations}")
            try:
                # A random moment: after 1-4 more requests reach the provider, then up to 0.2 s more.
                seen = server.requests + rng.randint(1, 4)
                _until(lambda: server.requests >= seen or cli.poll(pid) is not None)
                time.sleep(rng.uniform(0, 0.2))
                if cli.poll(pid) is None:
                    os.killpg(pid, signal.SIGKILL)  # the whole group: any helper process dies too
                    kills += 1
                _until(lambda: cli.poll(pid) is not None)
            finally:
                if cli.poll(pid) is None:
                    os.killpg(pid, signal.SIGKILL)
        final = cli.start(arguments(server, input_file, out), tmp_path / "stderr")
        _until(lambda: cli.poll(final) is not None)
        assert cli.poll(final) == 0, (tmp_path / "stderr").read_text()[-2000:]
    finally:
        cli.close()
        server.stop()
    units = Counter(line["id"] for name in ("candidates.jsonl", "rejects.jsonl") for line in read_jsonl(out / name))
    expected = {f"t{k}::{category}::0" for k in range(SOURCES) for category in CATEGORIES}
    assert set(units) == expected and max(units.values()) == 1, units  # 0 lost, 0 duplicated
    assert {line["id"].split("::")[0] for line in read_jsonl(out / "rejects.jsonl")} == {"t3"}
    # No batch paid twice: every batch the provider made is in the log (collected, none orphaned) and no request
    # is in two of them (none fails here, so none needed a second batch).
    assert set(server.batches) == set(read_batch_log(out).submitted)
    in_batches = Counter(custom_id for _, custom_id in server.submitted)
    assert max(in_batches.values()) == 1, [key for key, n in in_batches.items() if n > 1]
    assert json.loads((out / "manifest.json").read_text())["status"] == "finished"
