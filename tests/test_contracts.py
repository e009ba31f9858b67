"""Explicit contracts: the run configuration's hash (pinned, so run directories made before still resume), the
engine and trajectory-source protocols, the one owner of each rule."""
from __future__ import annotations

import pytest

from injector import LLMEngine, OfflineEngine, Taxonomy, load_trajectories
from injector.pipeline import config_hash, run_configuration

# Computed on the code before RunSpec existed (commit ae79b9b): a configuration whose hash changes makes every run
# directory of it refuse to resume ("made with another configuration").
PINNED_HASHES = {"offline": "4c35f503c5538105", "llm": "4587d255dd9fb2df"}


def pinned_configuration(engine) -> dict:
    taxonomy = Taxonomy.load()
    categories = taxonomy.select(["counterfactual", "multi_solution"])
    source = load_trajectories(None, "prm800k", strict=True)
    config = run_configuration(source=source.identity(), taxonomy=taxonomy, categories=categories, engine=engine,
                               samples=2, seed=5, output_mode="full")
    # What depends on where the checkout lies or on the bundled files' content is checked, then fixed, so the pin
    # holds on any machine and across taxonomy edits (which rightly change the hash).
    assert config["input"]["input"] == str(source.identity()["input"])
    assert config["taxonomy_path"] == str(taxonomy.path)
    assert config["taxonomy_hash"] == taxonomy.file_hash()
    assert config["template_hashes"] == {c.id: taxonomy.template_hash(c) for c in categories}
    config["input"]["input"], config["taxonomy_path"] = "/pinned/sample.jsonl", "/pinned/taxonomy.yaml"
    config["taxonomy_hash"], config["template_hashes"] = "T", {c.id: "H" for c in categories}
    return config


@pytest.mark.parametrize("engine", [OfflineEngine(), LLMEngine("gpt-4o", temperature=0.7, max_tokens=2048)],
                         ids=["offline", "llm"])
def test_the_configuration_hash_of_an_unchanged_configuration_is_unchanged(engine):
    assert config_hash(pinned_configuration(engine)) == PINNED_HASHES[engine.name]
