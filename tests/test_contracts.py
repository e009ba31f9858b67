"""Explicit contracts: the run configuration's hash (pinned, so run directories made before still resume), the
engine and trajectory-source protocols, the one owner of each rule."""
from __future__ import annotations

import pytest

from injector import LLMEngine, OfflineEngine, RunSpec, Taxonomy, load_trajectories
from injector.engines.offline import OPERATORS_VERSION
from injector.runner.loop import config_hash, run_configuration

# Computed on the code before RunSpec existed (commit ae79b9b): a configuration whose hash changes makes every run
# directory of it refuse to resume ("made with another configuration").
PINNED_HASHES = {"offline": "4c35f503c5538105", "llm": "4587d255dd9fb2df"}


def pinned_configuration(engine) -> dict:
    taxonomy = Taxonomy.load()
    categories = taxonomy.select(["counterfactual", "multi_solution"])
    source = load_trajectories(None, "prm800k", strict=True)
    # Settings outside the configuration (limit, attempts, concurrency, budget, ...) must not change the hash.
    spec = RunSpec(taxonomy=taxonomy, categories=categories, samples=2, seed=5, output_mode="full", limit=3,
                   max_attempts=1, concurrency=2, max_cost=1.0, retry_rejects=True)
    config = run_configuration(spec, engine, source.identity())
    # What depends on where the checkout lies or on the bundled files' content is checked, then fixed, so the pin
    # holds on any machine and across taxonomy edits (which rightly change the hash).
    assert config["input"]["input"] == str(source.identity()["input"])
    assert config["taxonomy_path"] == str(taxonomy.path)
    assert config["taxonomy_hash"] == taxonomy.file_hash()
    assert config["template_hashes"] == {c.id: taxonomy.template_hash(c) for c in categories}
    config["input"]["input"], config["taxonomy_path"] = "/pinned/sample.jsonl", "/pinned/taxonomy.yaml"
    config["taxonomy_hash"], config["template_hashes"] = "T", {c.id: "H" for c in categories}
    # The offline operators' version rightly changes the hash when the operators change (issue 15 made it 2): the
    # pin is of the configuration made with version 1.
    if "operators" in config:
        assert config["operators"] == OPERATORS_VERSION
        config["operators"] = "1"
    return config


@pytest.mark.parametrize("engine", [OfflineEngine(), LLMEngine("gpt-4o", temperature=0.7, max_tokens=2048)],
                         ids=["offline", "llm"])
def test_the_configuration_hash_of_an_unchanged_configuration_is_unchanged(engine):
    assert config_hash(pinned_configuration(engine)) == PINNED_HASHES[engine.name]


# ---- the engine protocol: a batch engine without litellm runs through run() -----------------------------------

import asyncio  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

from injector import IterableInput, Trajectory, dry_run, run  # noqa: E402
from injector.engines.base import Engine, Proposal  # noqa: E402

QUESTION = "What is $2 + 3$?"
STEPS = ["Let $x = 2$.", "Then $x + 3 = 5$.", "So the answer is 5.\n\n# Answer\n\n5"]
GOOD = {"question": None, "edits": [{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$.", "error": True}],
        "reason": "2 + 3 is 5, not 6."}
UNFLAGGED = dict(GOOD, edits=[{"op": "replace", "step": 2, "text": "Then $x + 3 = 6$."}])  # no error step


class CannedBatchEngine(Engine):
    """A batch client that is not litellm: `propose` files the request and waits; `flush` answers every filed
    request at once, as a batch API does when its job completes. The first answer for each trajectory lacks its
    error flag, so the validator's feedback goes back in a later batch."""

    name = "canned-batch"
    takes_feedback = True
    collects_batches = True

    def __init__(self) -> None:
        self.pending: list[tuple[list[dict], Trajectory, asyncio.Future]] = []
        self.batches: list[int] = []

    def describe(self) -> dict:
        return {"engine": self.name, "model": "canned", "api_base_host": None}

    def prices(self) -> tuple[float, float]:
        return 1e-6, 2e-6

    async def propose(self, messages, *, trajectory, category, seed, sample, response_schema, output_mode="edits",
                      read_cache=True) -> Proposal:
        answered = asyncio.get_running_loop().create_future()
        self.pending.append((messages, trajectory, answered))
        return await answered

    async def flush(self) -> None:
        batch, self.pending = self.pending, []
        if batch:
            self.batches.append(len(batch))
        for messages, _trajectory, answered in batch:
            text = json.dumps(GOOD if len(messages) > 2 else UNFLAGGED)  # a re-ask carries the feedback turns
            answered.set_result(Proposal(text=text, usage={"prompt_tokens": 10, "completion_tokens": 5},
                                         cost=10e-6 + 5 * 2e-6))


def trajectories(count: int) -> list[Trajectory]:
    return [Trajectory(id=f"t{k}", question=QUESTION, steps=[*STEPS[:2], STEPS[2] + "." * k], answer="5")
            for k in range(count)]


def test_a_batch_engine_without_litellm_runs_through_run(tmp_path):
    taxonomy = Taxonomy.load()
    engine = CannedBatchEngine()
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["counterfactual"]), out=tmp_path / "run",
                   concurrency=4)
    result = run(IterableInput(trajectories(6), identity={"input": "batch-test"}), spec, engine)
    candidates = [json.loads(line) for line in (tmp_path / "run" / "candidates.jsonl").read_text().splitlines()]
    assert sorted(c["trajectory_id"] for c in candidates) == [f"t{k}" for k in range(6)]
    assert all(c["provenance"]["attempts"] == [{"codes": ["no_error_steps"]}, {"codes": []}] for c in candidates)
    assert sum(engine.batches) == 12 and max(engine.batches) > 1  # many requests per batch, every one answered
    assert result.progress.cost == pytest.approx(12 * 20e-6)
    assert result.manifest.config["input"] == {"input": "batch-test"}
    assert result.manifest.source.model_dump() == {"read": 6, "selected": 6, "invalid": 0, "skipped": {}}


def test_an_engine_gets_the_protocols_defaults(tmp_path):
    class Minimal(Engine):  # only what is required
        name = "minimal"

        def describe(self) -> dict:
            return {"engine": self.name, "model": "m", "api_base_host": None}

        async def propose(self, messages, **request) -> Proposal:
            return Proposal(text=json.dumps(GOOD))

    taxonomy = Taxonomy.load()
    spec = RunSpec(taxonomy=taxonomy, categories=taxonomy.select(["counterfactual"]), max_attempts=3)
    report = dry_run(trajectories(2), spec, Minimal())
    assert report.units == 2 and report.max_attempts == 1 and report.cost_estimate == 0.0  # free, one attempt
    assert report.prompt_tokens > 0
    result = run(trajectories(2), spec.model_copy(update={"out": tmp_path / "run"}), Minimal())
    assert result.manifest.counts.candidates == 2 and result.progress.retries() == 0
    assert result.manifest.config["input"] == {"input": "python"}


def test_the_batch_engine_run_never_imports_litellm(tmp_path):
    script = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import test_contracts as t; "
              f"from pathlib import Path; t.test_a_batch_engine_without_litellm_runs_through_run(Path({str(tmp_path)!r})); "
              "print('litellm' in sys.modules)")
    output = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "False"


# ---- RunSpec ------------------------------------------------------------------------------------------------------

def test_run_spec_refuses_unknown_and_invalid_settings():
    from pydantic import ValidationError

    taxonomy = Taxonomy.load()
    categories = taxonomy.select(["counterfactual"])
    with pytest.raises(ValidationError, match="extra_forbidden"):
        RunSpec(taxonomy=taxonomy, categories=categories, sample=2)  # a typo of `samples`
    with pytest.raises(ValidationError, match="output_mode"):
        RunSpec(taxonomy=taxonomy, categories=categories, output_mode="diff")
    with pytest.raises(ValidationError, match="samples"):
        RunSpec(taxonomy=taxonomy, categories=categories, samples=0)
    spec = RunSpec(taxonomy=taxonomy, categories=categories)
    assert spec.taxonomy is taxonomy and spec.output_mode == "edits" and spec.max_attempts == 3


# ---- engines.from_model ---------------------------------------------------------------------------------------------

def test_from_model_builds_engine_limiter_and_cache(tmp_path):
    from injector.engines import from_model

    assert isinstance(from_model(None), OfflineEngine) and isinstance(from_model("offline"), OfflineEngine)
    engine = from_model("openai/x", api_base="http://127.0.0.1:9/v1", rpm=30, cache_path=tmp_path / "c.sqlite",
                        price_in=1, price_out=2, use_schema=False)
    from injector.engines.limits import RateLimiter

    assert isinstance(engine, LLMEngine) and isinstance(engine.limiter, RateLimiter)
    assert engine.cache is not None and engine.cache.path == tmp_path / "c.sqlite"
    assert engine.prices() == (1e-6, 2e-6) and engine.use_schema is False
    assert from_model("openai/x", use_cache=False).cache is None
    assert from_model("openai/x", temperature=0.2, max_tokens=9, use_cache=False).describe() == {
        "engine": "llm", "model": "openai/x", "api_base_host": None, "temperature": 0.2, "max_tokens": 9,
        "schema": True}


# ---- one owner per rule ---------------------------------------------------------------------------------------------

PACKAGE = Path(__file__).resolve().parents[1] / "injector"
ANSWERS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "answers.md"


def test_the_manuals_reason_code_table_is_the_catalogue():
    from injector.model.codes import reason_code_table

    table = reason_code_table()
    assert table.count("\n") == 1 + len(list(__import__("injector").ReasonCode))
    assert table in ANSWERS_PAGE.read_text(encoding="utf-8")


def test_every_reason_code_is_emitted_by_name_and_none_as_a_bare_string():
    import re

    from injector.model.codes import ReasonCode

    sources = {path: path.read_text(encoding="utf-8") for path in PACKAGE.rglob("*.py") if path.name != "codes.py"}
    used = {name for text in sources.values() for name in re.findall(r"ReasonCode\.([A-Z_]+)", text)}
    assert used == {code.name for code in ReasonCode}  # no code is dead, none is misspelt
    # In a module that emits codes, a code as a string literal is a second owner of its spelling. (Elsewhere the
    # same words name other things: a stats column `answer_changed`, a skipped source record `answer_mismatch`.)
    for path, text in sources.items():
        if "ReasonCode" not in text:
            continue
        for code in ReasonCode:
            assert f'"{code.value}"' not in text, f"{path}: \"{code.value}\"; use ReasonCode.{code.name}"


def test_every_exception_of_the_toolkit_is_an_injector_error():
    import importlib
    import inspect
    import pkgutil

    import injector
    from injector.util.errors import InjectorError

    classes = set()
    for module_info in pkgutil.walk_packages(injector.__path__, "injector."):
        module = importlib.import_module(module_info.name)
        classes |= {value for _, value in inspect.getmembers(module, inspect.isclass)
                    if issubclass(value, BaseException) and value.__module__.startswith("injector")}
    assert {c.__name__ for c in classes} >= {"AnswerError", "ProviderError", "TransientProviderError",
                                             "NotApplicable", "BadRecord", "ImageRefused", "TooDeep", "Refused"}
    assert [c.__name__ for c in classes if not issubclass(c, InjectorError)] == []


def test_the_cli_choices_are_the_registries():
    from injector.cli.commands import main
    from injector.answer.contract import OUTPUT_MODES
    from injector.sources.registry import format_names
    from injector.sources import DUPLICATE_ID_POLICIES

    for command in ("run", "render"):
        params = {p.name: p for p in main.commands[command].params}
        assert list(params["output_mode"].type.choices) == list(OUTPUT_MODES)
        assert list(params["input_format"].type.choices) == list(format_names())
        assert list(params["duplicate_ids"].type.choices) == list(DUPLICATE_ID_POLICIES)
    from injector.engines.openai_client import CLIENTS

    assert list({p.name: p for p in main.commands["run"].params}["client"].type.choices) == list(CLIENTS)


def test_multi_solution_answers_in_full_in_every_output_mode():
    from injector.answer.contract import MultiSolutionAnswer, answer_mode, parse_answer, response_schema
    from injector.util.errors import UserError
    from injector.inject.prompts import render_messages

    taxonomy = Taxonomy.load()
    multi, other = taxonomy.category("multi_solution"), taxonomy.category("counterfactual")
    assert [answer_mode(multi, mode) for mode in ("edits", "full")] == ["full", "full"]
    assert [answer_mode(other, mode) for mode in ("edits", "full")] == ["edits", "full"]
    with pytest.raises(UserError, match="unknown output mode 'diff': choose one of edits, full"):
        answer_mode(other, "diff")
    text = json.dumps({"modified_process": ["a", "b"], "reason": "r"})
    assert isinstance(parse_answer(text, multi_solution=True, edits=True), MultiSolutionAnswer)
    assert "edits" not in response_schema(multi_solution=True, edits=True)["properties"]
    trajectory = trajectories(1)[0]
    assert (render_messages(taxonomy, multi, trajectory, output_mode="edits")
            == render_messages(taxonomy, multi, trajectory, output_mode="full"))


def test_the_toolkits_engines_and_sources_implement_the_protocols():
    from injector import TrajectoryInput
    from injector.sources import as_input

    assert isinstance(OfflineEngine(), Engine) and isinstance(LLMEngine("gpt-4o"), Engine)
    source = load_trajectories()
    assert isinstance(source, TrajectoryInput) and as_input(source) is source
    wrapped = as_input(trajectories(2))
    assert isinstance(wrapped, IterableInput) and wrapped.identity() == {"input": "python"}
    assert wrapped.estimated_count() == 2 and [t.id for t in wrapped] == ["t0", "t1"]
