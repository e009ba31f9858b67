"""`inject run --log-prompts`: every request a run sends and the answer it gets, one JSON line each in
`<out>/prompts.jsonl` (like lm-evaluation-harness's `--log_samples`), for reading what the model was asked and
what it said, rejected answers included.

A line: `time`, `unit`, `attempt`, `model`, `seed`, `request` (`messages`, `response_schema`), `answer` (the raw
text, or null), `cached`, `usage`, `cost` and `error` (the provider's refusal). Every line passes `redact` (keys,
URL credentials, `key=`/`token=` values and the environment's secrets); no header is ever logged. Appended with one
write per line, so worker processes writing beside each other keep whole lines.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from injector.engines.base import Engine, Proposal
from injector.inject.unit import Unit
from injector.util.clock import utc_now
from injector.util.errors import WriteFailed
from injector.util.redaction import redact
from injector.util.safe_files import open_append

PROMPTS_FILE = "prompts.jsonl"


class PromptLog(Engine):
    """An engine as the run loop sees it, each `propose` and its outcome appended to `run_dir/prompts.jsonl`."""

    def __init__(self, engine: Engine, run_dir: Path):
        self.engine, self.path = engine, Path(run_dir) / PROMPTS_FILE
        self.name, self.takes_feedback = engine.name, engine.takes_feedback
        self.collects_batches, self.judges = engine.collects_batches, engine.judges
        self.attempts: Counter[str] = Counter()
        self.model = engine.describe().get("model")

    def __getattr__(self, name: str) -> Any:  # anything else the loop reads is the engine's own
        return getattr(self.engine, name)

    def describe(self) -> dict[str, Any]:
        return self.engine.describe()

    async def flush(self) -> None:
        await self.engine.flush()

    async def propose(self, messages: list[dict[str, Any]], **request: Any) -> Proposal:
        unit = Unit(request["trajectory"], request["category"], request["sample"]).id
        self.attempts[unit] += 1
        line: dict[str, Any] = {
            "time": utc_now(), "unit": unit, "attempt": self.attempts[unit], "model": self.model,
            "seed": request["seed"] + request["sample"],
            "request": {"messages": messages, "response_schema": request.get("response_schema")},
        }
        try:
            proposal = await self.engine.propose(messages, **request)
        except Exception as exc:  # noqa: BLE001 - logged with what was asked, then re-raised to the unit's own handling
            self._write({**line, "answer": None, "error": f"{type(exc).__name__}: {exc}"})
            raise
        self._write({**line, "answer": proposal.text, "cached": bool(proposal.details.get("cached")),
                     "usage": proposal.usage, "cost": proposal.cost, "error": None})
        return proposal

    def _write(self, line: dict[str, Any]) -> None:
        text = redact(json.dumps(line, ensure_ascii=False, default=str)) + "\n"
        try:
            with open_append(self.path) as handle:  # one write: whole lines beside other workers; no link followed
                handle.write(text.encode("utf-8"))
        except OSError as exc:  # stops the run as any failed write does (exit 2, resumable)
            raise WriteFailed(self.path, exc) from None
