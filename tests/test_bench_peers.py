"""`bench/peers.py` and the fake provider's peer support, without running a peer: argument handling, the prompts it
hands the peers, the report's ratios, curator's probe and data-designer's list-of-parts messages."""
from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parent.parent / "bench"


def load(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up by name
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_arguments(tmp_path):
    peers = load("peers")
    args = peers.parse_args(["--quick", "--tools", "inject,curator", "--cache-dir", str(tmp_path)])
    assert args.tools == ["inject", "curator"] and args.rounds == 1 and args.instant == 200
    assert args.cache_dir == tmp_path
    full = peers.parse_args([])
    sizes = (full.instant, full.latency_requests, full.latency, full.concurrency, full.rounds)
    assert sizes == (2000, 1000, 2.0, 64, 2)
    with pytest.raises(SystemExit):
        peers.parse_args(["--tools", "inject,langchain"])


def test_a_peer_that_is_not_installed_is_skipped_with_the_reason(tmp_path):
    peers = load("peers")
    python, why = peers.ensure_peer(tmp_path, peers.PEERS["curator"], install=False)
    assert python is None and "not installed" in why


def test_peers_get_the_toolkits_own_prompts(tmp_path):
    peers, run_loop = load("peers"), load("run_loop")
    from injector import Taxonomy, load_trajectories, render_messages

    source = run_loop.make_input(tmp_path / "in.jsonl", 3)
    assert peers.write_prompts(source, tmp_path / "prompts.jsonl") == 3
    written = [json.loads(line)["messages"] for line in (tmp_path / "prompts.jsonl").read_text().splitlines()]
    taxonomy = Taxonomy.load()
    category = taxonomy.select(["counterfactual"])[0]
    expected = [render_messages(taxonomy, category, t, output_mode="edits", attach_images=False)
                for t in load_trajectories(str(source), "trajectories")]
    assert written == expected and [m["role"] for m in written[0]] == ["system", "user"]


def test_ratio_table_divides_by_inject_in_the_same_round():
    peers = load("peers")
    results = peers.Results()
    for tool, values in (("inject", [10.0, 20.0]), ("curator", [15.0, 20.0])):
        for value in values:
            results.add("instant: requests/s, whole process", tool, value)
    table = peers.tables(results, ["inject", "curator"])
    assert "| instant: requests/s, whole process | 10.0–20.0 | 15.0–20.0 |" in table
    assert "| instant: requests/s, whole process | 1.00–1.50 |" in table


def test_fake_provider_answers_curators_probe_and_joins_text_parts():
    fake = load("fake_provider")
    provider = fake.FakeProvider(fake.Settings())
    status, _, body = asyncio.run(provider.chat({"model": "bench", "messages": []}))
    assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "ok"
    assert provider.counts["probe"] == 1 and provider.counts["requests"] == 0 and provider.first_request is None
    user = ("<question>\nTom has 3 apples.\n</question>\n<steps>\n[\"He has $3 + 1 = 4$.\"]\n</steps>\n"
            "of your edits only")
    parts = [{"type": "text", "text": user[:20]}, {"type": "text", "text": user[20:]}]
    status, _, body = asyncio.run(provider.chat({"model": "bench", "messages": [{"role": "user", "content": parts}]}))
    answer = json.loads(json.loads(body)["choices"][0]["message"]["content"])
    assert status == 200 and answer["edits"][0]["text"] == "He has $3 + 1 = 5$."
    assert provider.counts["requests"] == 1
