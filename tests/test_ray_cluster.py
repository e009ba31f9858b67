"""`inject run --executor ray` on a two-node Ray cluster (`ray.cluster_utils.Cluster`: two raylets of one CPU each
on this machine), reached the way a cluster is, through RAY_ADDRESS: the workers land on both nodes, and the 500
units give the local loop's ids and payloads. Skipped, with the reason, when Ray is not installed."""
from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from injector.cli.commands import main

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                                reason="Ray is not installed (pip install -e '.[test,ray]')")

ROOT = Path(__file__).resolve().parents[1]
CATEGORIES = ["redundancy", "circular_logic"]  # what the offline engine offers


@pytest.fixture(scope="module")
def two_nodes():
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    yield cluster
    cluster.shutdown()


def outcomes(out: Path) -> dict[str, dict]:
    records = {}
    for name in ("candidates.jsonl", "rejects.jsonl"):
        for line in (out / name).read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            for key in ("time", "attempts"):
                record["provenance"].pop(key)
            assert record["id"] not in records, f"{record['id']} written twice"
            records[record["id"]] = {"file": name, **record}
    return records


def test_two_nodes_through_ray_address_give_the_local_loops_records(two_nodes, tmp_path, monkeypatch):
    args = ["run", "--input", str(ROOT / "data" / "sample.jsonl"), "--limit", "25", "--samples", "10",
            *(f"--category={category}" for category in CATEGORIES)]
    local = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "local")])
    assert local.exit_code == 0, local.output
    monkeypatch.setenv("RAY_ADDRESS", two_nodes.address)
    spread = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "ray"), "--executor", "ray"])
    assert spread.exit_code == 0, spread.output
    assert "ray: 2 workers on 2 nodes, 0 replaced" in spread.output  # one worker per CPU, one CPU per node
    expected = outcomes(tmp_path / "local")
    assert len(expected) == 500
    assert outcomes(tmp_path / "ray") == expected
