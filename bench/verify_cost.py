"""What `inject verify` costs per candidate, in critiques (requests) and tokens, when categories share a trajectory.

The data: the 20 PRMBench source problems (train phase 1, `tests/fixtures/prmbench`) that all eight injected
category files hold. Each becomes one trajectory (its counterfactual record's `original_process`), with one
candidate per category: the category file's `modified_process` and error steps, and for multi_solution (whose
fixture records are other problems) the source steps themselves as the alternative (an alternative is about as long
as the source; its verdict does not matter here). The run directory is written with the toolkit's own records, and
`injector.triage.verify.verify` runs its real loop against an in-process judge that counts every request's prompt tokens
with the gpt-4o tokenizer (litellm's `token_counter`, offline) and answers `{"first_error_step": -1, "reason":
"..."}` (14 completion tokens), so every verdict is `missed` or `confirmed` and `--votes` spends its votes on the
injected categories: the votes rows are the worst case.

A critique's tokens are its prompt plus its answer; "tokens in critiques" divides a candidate's tokens by the mean
tokens of one critique of a modified solution, so 1.00 would be a candidate that costs exactly its own critique.

    python bench/verify_cost.py            # the table of bench/RESULTS.md
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from injector.triage.critique import critique_kind, critique_messages, rollout_messages  # noqa: E402
from injector.engines.base import Engine, Proposal  # noqa: E402
from injector.engines.llm import import_litellm  # noqa: E402
from injector.records.directory import RunDirectory  # noqa: E402
from injector.records.models import Candidate, RunManifest  # noqa: E402
from injector.taxonomy import Taxonomy  # noqa: E402
from injector.triage.judging import rollout_truth  # noqa: E402
from injector.triage.verify import VerifySpec, verify  # noqa: E402

PRMBENCH = ROOT / "tests" / "fixtures" / "prmbench"
ANSWER = json.dumps({"first_error_step": -1, "reason": "Every step follows from the previous ones."})


class CountingJudge(Engine):
    """Answers every critique with -1 and counts what each request would cost (gpt-4o tokenizer)."""

    name = "counting-judge"
    judges = True

    def __init__(self) -> None:
        self.litellm = import_litellm()
        self.requests: list[dict[str, Any]] = []
        self.answer_tokens = int(self.litellm.token_counter(model="gpt-4o", text=ANSWER))

    def describe(self) -> dict[str, Any]:
        return {"engine": self.name, "model": "gpt-4o-tokens", "api_base_host": None}

    async def propose(self, messages: list[dict[str, Any]], **request: Any) -> Proposal:
        raise NotImplementedError("a judge only")

    async def ask(self, messages: list[dict[str, Any]], *, seed: int, response_schema: dict[str, Any] | None = None,
                  schema_name: str = "answer", read_cache: bool = True) -> Proposal:
        prompt = int(self.litellm.token_counter(model="gpt-4o", messages=messages))
        self.requests.append({"user": messages[1]["content"], "prompt": prompt})
        return Proposal(text=ANSWER, usage={"prompt_tokens": prompt, "completion_tokens": self.answer_tokens},
                        cost=0.0)


def shared_sources() -> dict[str, dict[str, dict[str, Any]]]:
    """idx -> category -> PRMBench record, for the source problems every injected category file holds."""
    taxonomy = Taxonomy.load()
    by_classification = {c.classification: c.id for c in taxonomy.categories}
    records: dict[str, dict[str, dict[str, Any]]] = {}
    for path in sorted(PRMBENCH.glob("prm800k_train_p1_first400_4o_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            records.setdefault(record["idx"], {})[by_classification[record["classification"]]] = record
    return {idx: found for idx, found in records.items() if len(found) == 8}


def write_run(path: Path, categories: list[str], samples: int) -> int:
    """A run directory with one candidate per (shared source, category, sample); returns the candidates."""
    taxonomy = Taxonomy.load()
    config = {"bench": "verify_cost", "categories": categories, "samples": samples}
    directory = RunDirectory(path)
    directory.prepare("bench")
    directory.write_manifest(RunManifest(
        command=["bench/verify_cost.py"], config=config, config_hash="bench", toolkit_version="bench",
        started="bench", categories={cid: {"name": taxonomy.category(cid).name,
                                           "domain": taxonomy.category(cid).domain,
                                           "classification": taxonomy.category(cid).classification}
                                     for cid in categories}))
    written = 0
    for idx, found in sorted(shared_sources().items()):
        source = found["counterfactual"]
        question, steps = source["original_question"], source["original_process"]
        for cid in categories:
            category = taxonomy.category(cid)
            record = found.get(cid)
            modified = record["modified_process"] if record else steps  # multi_solution: the source as alternative
            errors = [k for k in (record or {}).get("error_steps", []) if 1 <= k <= len(modified)]
            for sample in range(samples):
                directory.append(Candidate(
                    original_question=question, modified_question=question, original_process=steps,
                    modified_process=modified, modified_steps=errors, error_steps=errors, reason="", idx=idx,
                    question=question, classification=category.classification, id=f"{idx}::{cid}::{sample}",
                    category=cid, trajectory_id=idx, sample=sample))
                written += 1
    directory.release()
    return written


def measure(categories: list[str], samples: int, votes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as temporary:
        run = Path(temporary) / "run"
        candidates = write_run(run, categories, samples)
        judge = CountingJudge()
        summary = verify(run, judge, VerifySpec(votes=votes, concurrency=8))
        taxonomy = Taxonomy.load()
        # One critique of each candidate's own (modified) solution: the unit "tokens in critiques" counts in.
        own = [judge.litellm.token_counter(model="gpt-4o", messages=critique_messages(
            critique_kind(taxonomy.category(c.category)), c.modified_question, c.modified_process, []))
            + judge.answer_tokens for c in RunDirectory(run).candidates()]
    tokens = summary.usage.prompt_tokens + summary.usage.completion_tokens
    per_critique = sum(own) / len(own)
    return {"categories": len(categories), "samples": samples, "votes": votes, "candidates": candidates,
            "requests": summary.usage.requests, "requests_per_candidate": summary.usage.requests / candidates,
            "tokens_per_candidate": tokens / candidates, "tokens_in_critiques": tokens / candidates / per_critique,
            "verdicts": summary.verdicts}


def rollout_cost() -> dict[str, Any]:
    """Tokens of one rollout pair (one continuation from before the first error step, one through it) for the
    shared sources' candidates that qualify (final answer changed, question kept): prompts counted exactly,
    continuations estimated as the modified solution's steps after each prefix (what a continuation rewrites)."""
    litellm = import_litellm()
    taxonomy = Taxonomy.load()
    prompt = completion = qualifying = 0
    for found in shared_sources().values():
        for cid, record in found.items():
            question, modified = record["original_question"], record["modified_process"]
            errors = [k for k in record["error_steps"] if 1 <= k <= len(modified)]
            candidate = Candidate(
                original_question=question, modified_question=record["modified_question"],
                original_process=record["original_process"], modified_process=modified, modified_steps=errors,
                error_steps=errors, reason="", idx=record["idx"], question=question,
                classification=taxonomy.category(cid).classification, id=cid, category=cid, trajectory_id="t",
                sample=0)
            if not errors or rollout_truth(candidate, critique_kind(taxonomy.category(cid))) is None:
                continue
            qualifying += 1
            first = min(errors)
            for prefix in (modified[:first - 1], modified[:first]):
                prompt += int(litellm.token_counter(model="gpt-4o",
                                                    messages=rollout_messages(question, prefix, [])))
                completion += int(litellm.token_counter(model="gpt-4o", text="\n\n".join(modified[len(prefix):])))
    return {"qualifying": qualifying, "prompt_per_pair": prompt / qualifying,
            "completion_per_pair": completion / qualifying}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    every = [c.id for c in Taxonomy.load().categories]
    rows = [measure(every, 1, 1), measure(every, 2, 1), measure(["counterfactual"], 1, 1),
            measure(every, 1, 3)]
    rollouts = rollout_cost()
    if args.json:
        print(json.dumps({"rows": rows, "rollouts": rollouts}, indent=2))
        return
    print("| categories on one trajectory | samples | votes | candidates | requests | requests per candidate | "
          "tokens per candidate | tokens in critiques |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(f"| {row['categories']} | {row['samples']} | {row['votes']} | {row['candidates']} | {row['requests']} | "
              f"{row['requests_per_candidate']:.2f} | {row['tokens_per_candidate']:,.0f} | "
              f"{row['tokens_in_critiques']:.2f} |")
    print(f"\nrollouts: {rollouts['qualifying']} qualifying candidates; one continuation from before the first "
          f"error step and one through it: {rollouts['prompt_per_pair']:,.0f} prompt tokens and about "
          f"{rollouts['completion_per_pair']:,.0f} completion tokens (the steps after each prefix)")


if __name__ == "__main__":
    main()
