"""An LLM judge for `inject eval --judge MODEL`: one request per solution (template `prompts/judge_steps.j2`), asking
for a verdict on every step, `{"steps": [{"step": int, "correct": bool}]}`.

It goes through the run loop's machinery (`LLMEngine.complete`: the rate limiter, transient retries, the request
cache, cost), with `concurrency` requests in flight. An answer that does not give exactly one verdict for every step
is sent back once with what is wrong; a second such answer makes the solution *invalid* (left out of PRMScore,
wrong for ProcessBench; the report gives the validity rate). Each judged solution is appended to
`OUT/judge_answers.jsonl` as it comes, so an interrupted evaluation (Ctrl-C, `--max-cost`, a provider outage)
continues where it stopped when the same command runs again.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from jinja2 import FileSystemLoader, StrictUndefined, TemplateError
from jinja2.sandbox import SandboxedEnvironment

from injector.triage.critique import as_data
from injector.answer.contract import AnswerError, parse_json_object
from injector.engines.base import ProviderError, TransientProviderError
from injector.engines.llm import LLMEngine
from injector.util.errors import (BudgetExceeded, InjectorError, NothingMeasured, ProviderUnreachable, UserError,
                                   WriteFailed)
from injector.util.resources import bundled_prompts_dir
from injector.evaluate.metrics import EvalItem
from injector.triage.measured import excerpt, judge_out_of_format
from injector.evaluate.scorers import ScorerResult
from injector.util.answer_limits import capped_text
from injector.util.json_bounds import loads_bounded

JOURNAL_FILE = "judge_answers.jsonl"
TEMPLATE_NAME = "judge_steps.j2"
VERDICTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"steps": {"type": "array", "items": {
        "type": "object", "properties": {"step": {"type": "integer"}, "correct": {"type": "boolean"}},
        "required": ["step", "correct"], "additionalProperties": False}}},
    "required": ["steps"],
    "additionalProperties": False,
}


def template_path(path: str | Path | None = None) -> Path:
    return Path(path) if path is not None else bundled_prompts_dir() / TEMPLATE_NAME


def judge_messages(item: EvalItem, template: str | Path | None = None) -> list[dict[str, Any]]:
    """The system message (the same for every solution) and the user message (the question and numbered steps,
    fenced as data: `as_data`)."""
    path = template_path(template)
    environment = SandboxedEnvironment(loader=FileSystemLoader(str(path.parent)), undefined=StrictUndefined,
                                       trim_blocks=True, lstrip_blocks=True, autoescape=False)
    try:
        compiled = environment.get_template(path.name)
        system = compiled.render(part="system").strip()
        user = compiled.render(part="user", question=as_data(item.question),
                               steps=[as_data(step) for step in item.steps]).strip()
    except TemplateError as exc:
        raise UserError(f"{path}: template error: {exc}") from None
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def read_step_verdicts(text: str, n_steps: int) -> tuple[list[bool] | None, str | None]:
    """The verdict of every step 1..n_steps (True: correct), or None and what is wrong with the answer."""
    try:
        answer = parse_json_object(text)
    except AnswerError as exc:
        return None, str(exc)
    entries = answer.get("steps")
    if not isinstance(entries, list):
        return None, 'The answer has no "steps" list.'
    verdicts: dict[int, bool] = {}
    for entry in entries:
        step = entry.get("step") if isinstance(entry, dict) else None
        correct = entry.get("correct") if isinstance(entry, dict) else None
        if isinstance(step, bool) or not isinstance(step, int) or not isinstance(correct, bool):
            return None, ('Each entry of "steps" must be {"step": <step number>, "correct": true or false}, found '
                          f"{json.dumps(entry)[:80]}.")
        if not 1 <= step <= n_steps:
            return None, f"Step {step} does not exist: the solution has steps 1 to {n_steps}."
        if step in verdicts:
            return None, f"Step {step} has more than one verdict."
        verdicts[step] = correct
    missing = [k for k in range(1, n_steps + 1) if k not in verdicts]
    if missing:
        return None, f"No verdict for step(s) {', '.join(map(str, missing))}."
    return [verdicts[k] for k in range(1, n_steps + 1)], None


def judge_feedback(problem: str, n_steps: int) -> str:
    return (f"{problem} Answer again with one JSON object holding exactly one verdict for each of the {n_steps} "
            'steps, numbered 1 to ' f'{n_steps}: {{"steps": [{{"step": 1, "correct": true}}, ...]}}')


@dataclass
class LLMJudge:
    """A judge model through litellm; `engine` carries its limiter, cache and prices (`engines.from_model`)."""

    engine: LLMEngine
    concurrency: int = 16
    max_cost: float | None = None
    seed: int = 0
    template: str | Path | None = None
    on_progress: Callable[[int, int], None] | None = None
    """Called after each judged solution with (judged so far, solutions to judge in this invocation)."""
    spent: float | None = field(default=0.0, init=False)
    """Dollars this invocation spent; None once an answer had no known price."""

    def configuration(self) -> dict[str, Any]:
        """What changes the answers: a report directory's saved answers are reused only under the same."""
        text = template_path(self.template).read_bytes()
        return {**self.engine.describe(), "seed": self.seed,
                "template_sha256": hashlib.sha256(text).hexdigest()[:16]}

    def score(self, items: Sequence[EvalItem], out: Path) -> ScorerResult:
        self.engine.check_ready()
        if self.max_cost is not None and self.engine.prices() is None:
            raise UserError(f"--max-cost needs a price, and {self.engine.model!r} has none in litellm's list: set "
                            "--price-in and --price-out (dollars per million tokens)")
        config = self.configuration()
        digest = hashlib.sha256(json.dumps(config, sort_keys=True).encode()).hexdigest()[:16]
        journal = out / JOURNAL_FILE
        steps_of = {item.id: len(item.steps) for item in items}
        # A saved verdict list of another length belongs to another version of the solution: judged again.
        done = {item_id: record for item_id, record in _read_journal(journal, digest).items()
                if record["verdicts"] is None or len(record["verdicts"]) == steps_of.get(item_id)}
        todo = [item for item in items if item.id not in done]
        if todo:
            try:
                out.mkdir(parents=True, exist_ok=True)
                handle = journal.open("a", encoding="utf-8")
            except OSError as exc:
                raise WriteFailed(journal, exc) from None
            with handle:
                failures = asyncio.run(self._judge_all(todo, digest, handle, done))
            unjudged = [item for item in items if item.id not in done]
            if unjudged and self._over_budget():
                raise BudgetExceeded(f"spent ${self.spent:.4f}, reaching --max-cost ${self.max_cost:g}, with "
                                     f"{len(unjudged)} solutions left; run the same command again to continue")
            if unjudged:
                raise ProviderUnreachable(f"{len(unjudged)} solutions could not be judged ({failures[-1]}); the "
                                          f"answers so far are kept in {journal}: run the same command again")
        scores: dict[str, Sequence[float] | None] = {}
        details: dict[str, dict[str, Any]] = {}
        for item in items:
            record = done[item.id]
            verdicts = record["verdicts"]
            scores[item.id] = None if verdicts is None else tuple(1.0 if v else 0.0 for v in verdicts)
            details[item.id] = {"judge_problem": record["problem"], "judge_answers": record["answers"]}
        valid = sum(score is not None for score in scores.values())
        refused = [done[item.id]["problem"] for item in items if done[item.id].get("provider_error")]
        if refused and len(refused) == len(items):
            raise UserError(f"the provider refused every request ({refused[0]}); check --judge and --api-base")
        if items and not valid:
            raise nothing_measured([done[item.id] for item in items], journal)
        return ScorerResult(scores=scores, scorer={"kind": "judge", **config}, validity=valid / len(items),
                            cost=self.spent, details=details,
                            notes=[f"{len(items) - len(todo)} solutions judged earlier, read from {journal}"]
                            if len(todo) < len(items) else [])

    def _over_budget(self) -> bool:
        return self.max_cost is not None and self.spent is not None and self.spent >= self.max_cost

    def _charge(self, cost: float | None) -> None:
        self.spent = None if self.spent is None or cost is None else self.spent + cost

    async def _judge_all(self, items: list[EvalItem], digest: str, handle: Any, done: dict[str, Any]) -> list[str]:
        queue: asyncio.Queue[EvalItem] = asyncio.Queue()
        for item in items:
            queue.put_nowait(item)
        failures: list[str] = []

        async def worker() -> None:
            while not queue.empty() and not self._over_budget():
                item = queue.get_nowait()
                try:
                    record = await self._judge_one(item)
                except TransientProviderError as exc:
                    failures.append(str(exc))
                    continue
                record["config"] = digest
                try:
                    handle.write(json.dumps(record, ensure_ascii=False) + "\n")
                    handle.flush()
                except OSError as exc:
                    raise WriteFailed(handle.name, exc) from None
                done[item.id] = record
                judged[0] += 1
                if self.on_progress is not None:
                    self.on_progress(judged[0], len(items))

        judged = [0]
        await asyncio.gather(*(worker() for _ in range(max(1, self.concurrency))))
        return failures

    async def _judge_one(self, item: EvalItem) -> dict[str, Any]:
        messages = judge_messages(item, self.template)
        answers: list[str] = []
        verdicts, problem = None, None
        usage = {"prompt_tokens": 0, "completion_tokens": 0}
        for _attempt in range(2):  # the answer, and once more with what was wrong with it
            try:
                proposal = await self.engine.ask(messages, seed=self.seed, response_schema=VERDICTS_SCHEMA,
                                                      schema_name="step_verdicts")
            except ProviderError as exc:  # refused for good (context window, 400): this solution is invalid
                return {"id": item.id, "verdicts": None, "problem": f"provider error: {exc}", "answers": answers,
                        "usage": usage, "provider_error": True}
            self._charge(proposal.cost)
            for key in usage:
                usage[key] += proposal.usage.get(key, 0)
            answers.append(capped_text(proposal.text) or "")  # what the journal keeps: not a huge answer whole
            verdicts, problem = read_step_verdicts(proposal.text, len(item.steps))
            if verdicts is not None:
                break
            messages = [*messages, {"role": "assistant", "content": proposal.text},
                        {"role": "user", "content": judge_feedback(problem or "", len(item.steps))}]
        return {"id": item.id, "verdicts": verdicts, "problem": problem, "answers": answers, "usage": usage}


def nothing_measured(records: list[dict[str, Any]], journal: Path) -> InjectorError:
    """The error for a judge none of whose answers was valid: exit 2 when no answer was even in the format asked
    for (the judge does not follow it: another model, or --no-schema for a server that mishandles it), else exit 5
    (answers in the format, none covering every step once); either says what the judge returned."""
    answers = [record["answers"][-1] for record in records if record.get("answers")]
    returned = f"its last answer: {excerpt(answers[-1])}" if answers else "no answer text"
    problem = next((record["problem"] for record in reversed(records) if record.get("problem")), "no verdicts")
    if answers and not any(_in_format(answer) for answer in answers):
        return judge_out_of_format(problem, returned, f"its answers are in {journal}: remove it (or choose another "
                                   "--out) to judge again")
    return NothingMeasured(f"no answer of the judge was valid, so nothing was measured ({problem}; {returned}); "
                           f"its answers are in {journal}")


def _in_format(answer: str) -> bool:
    """Whether an answer is a JSON object with a "steps" list (right or wrong in what it lists)."""
    try:
        return isinstance(parse_json_object(answer).get("steps"), list)
    except AnswerError:
        return False


def _read_journal(path: Path, digest: str) -> dict[str, dict[str, Any]]:
    """Solutions judged by an earlier invocation into this report directory (the same configuration only)."""
    done: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return done
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{path}: cannot read the saved judge answers ({exc}); remove it to judge again") from None
    for line in lines:
        try:
            record = loads_bounded(line)
        except ValueError:
            continue  # a line torn by a kill (or past the JSON limits): that solution is judged again
        if not isinstance(record, dict) or not isinstance(record.get("id"), str):
            continue
        if record.get("config") != digest:
            raise UserError(f"{path} holds answers of another judge configuration (model, sampling, template); "
                            "choose another --out, or remove the file to judge again")
        verdicts = record.get("verdicts")
        if verdicts is not None and not (isinstance(verdicts, list) and all(isinstance(v, bool) for v in verdicts)):
            continue
        done.setdefault(record["id"], {**record, "answers": record.get("answers") or [],
                                       "problem": record.get("problem")})
    return done
