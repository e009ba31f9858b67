"""A process reward model served by vLLM (`vllm serve Qwen/Qwen2.5-Math-PRM-7B`), through its pooling endpoint.

What the request and answer look like (read from vLLM 0.33.0's source: `entrypoints/pooling/pooling/protocol.py`,
`pooling/serving.py`, `model_executor/layers/pooler/tokwise/methods.py`, `models/config.py`): `POST /pooling` with
`{"model", "messages"}` (the chat form; the server applies the model's chat template, no generation prompt);
the answer is `{"data": [{"index": 0, "object": "pooling", "data": [[p_neg, p_pos], ...]}], ...}`. A model vLLM
runs with STEP pooling (Qwen2ForProcessRewardModel: step_tag_id 151651, `<extra_0>`, two labels, softmax) returns
one row per separator token: the solution goes in as the assistant message with the separator after each step, as
Qwen's model card does, and the positive-class probability of row k is step k's score. No torch here: the model runs
wherever vLLM runs.
"""
from __future__ import annotations

import asyncio
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from injector.engines.cache import RequestCache, request_key
from injector.util.errors import InjectorError, ProviderUnreachable, UserError
from injector.util.answer_limits import DEFAULT_MAX_ANSWER_BYTES, AnswerTooLarge
from injector.util.json_bounds import JsonRefused, loads_bounded
from injector.util.redaction import public_host
from injector.evaluate.metrics import EvalItem
from injector.evaluate.scorers import ScorerResult

QWEN_PRM_SEPARATOR = "<extra_0>"
QWEN_PRM_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
"""The system prompt of Qwen2.5-Math-PRM's model card."""
ATTEMPTS = 4  # a 5xx or a refused connection is tried this many times, with growing waits


class PRMServerError(InjectorError):
    """The server answered something that is not one probability per step (exit 2)."""

    exit_code = 2


def pooling_url(url: str) -> str:
    """The pooling endpoint of a server URL: vLLM serves it at the root (`/pooling`), not under `/v1`."""
    base = url.rstrip("/")
    if base.endswith("/pooling"):
        return base
    if base.endswith("/v1"):
        base = base[: -len("/v1")]
    return base + "/pooling"


def pooling_request(item: EvalItem, model: str, separator: str, system: str) -> dict[str, Any]:
    """The request body for one solution: the question, then the steps, each followed by the separator."""
    messages = [{"role": "system", "content": system}] if system else []
    messages += [{"role": "user", "content": item.question},
                 {"role": "assistant", "content": "".join(step + separator for step in item.steps)}]
    return {"model": model, "messages": messages}


def step_scores_of(answer: Any, n_steps: int) -> list[float]:
    """The positive-class probability per separator from a pooling answer, or PRMServerError saying what is off."""
    try:
        rows = answer["data"][0]["data"]
    except (KeyError, IndexError, TypeError):
        raise PRMServerError("the answer has no `data[0].data`; is the URL a vLLM server with the pooling endpoint?") \
            from None
    if not isinstance(rows, list):
        raise PRMServerError("`data[0].data` is not a list (ask for the float encoding)")
    if len(rows) != n_steps:
        raise PRMServerError(f"{len(rows)} scores for {n_steps} steps: the model must be served with STEP pooling, and "
                             "--step-separator must be the token it pools at (Qwen PRMs: <extra_0>)")
    scores = []
    for row in rows:
        # [p_neg, p_pos] for a two-label PRM; a one-label PRM gives its probability alone.
        value = row[-1] if isinstance(row, list) and len(row) in (1, 2) else row
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not 0 <= value <= 1:
            raise PRMServerError(f"score {json.dumps(row)[:40]} is not a probability (or [p_neg, p_pos]); serve the "
                                 "model with its classifier activation on")
        scores.append(float(value))
    return scores


@dataclass
class PRMServer:
    """Scores each solution with a PRM served by vLLM's pooling endpoint; answers are cached like a judge's."""

    url: str
    model: str
    separator: str = QWEN_PRM_SEPARATOR
    system: str = QWEN_PRM_SYSTEM
    concurrency: int = 16
    timeout: float = 300.0
    cache: RequestCache | None = None
    backoff_seconds: float = 1.0
    max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES
    """Largest answer read (bytes): a larger one is refused unread (a solution's scores are a few KB)."""
    on_progress: Callable[[int, int], None] | None = None
    """Called after each scored solution with (scored so far, solutions)."""

    def score(self, items: Sequence[EvalItem], out: Path) -> ScorerResult:
        for item in items:
            if any(self.separator in step for step in item.steps):
                raise UserError(f"solution {item.id!r}: a step contains the separator {self.separator!r}, so the "
                                "model would score it twice; choose another --step-separator")
        public_host(self.url)  # registers any userinfo of the URL as a secret to redact
        scores = asyncio.run(self._score_all(items))
        return ScorerResult(scores=dict(scores), scorer={"kind": "prm_server", "model": self.model,
                                                         "server_host": public_host(self.url),
                                                         "step_separator": self.separator})

    async def _score_all(self, items: Sequence[EvalItem]) -> list[tuple[str, tuple[float, ...] | None]]:
        import httpx

        limit = asyncio.Semaphore(self.concurrency)
        scored = [0]
        from injector.util.bounded_http import bounded_transport

        # httpx's timeout restarts with every byte: the transport holds each answer to one deadline.
        transport = bounded_transport(self.timeout, self.max_answer_bytes, httpx=httpx)
        async with httpx.AsyncClient(timeout=self.timeout, transport=transport) as client:
            async def one(item: EvalItem) -> tuple[str, tuple[float, ...] | None]:
                async with limit:
                    scores = tuple(await self._score_one(client, item))
                scored[0] += 1
                if self.on_progress is not None:
                    self.on_progress(scored[0], len(items))
                return item.id, scores

            return list(await asyncio.gather(*(one(item) for item in items)))

    async def _score_one(self, client: Any, item: EvalItem) -> list[float]:
        import httpx

        body = pooling_request(item, self.model, self.separator, self.system)
        key = request_key({"pooling": public_host(self.url), **body})
        if self.cache is not None and (hit := self.cache.get(key)):
            return [float(score) for score in json.loads(hit["text"])]
        url = pooling_url(self.url)
        failure = ""
        for attempt in range(ATTEMPTS):
            if attempt:
                await asyncio.sleep(self.backoff_seconds * 2 ** (attempt - 1))
            try:
                response = await client.post(url, json=body)
            except httpx.HTTPError as exc:
                failure = f"{type(exc).__name__}: {exc}"
                continue
            except AnswerTooLarge as exc:
                raise PRMServerError(f"solution {item.id!r}: the PRM server's answer was refused: {exc}") from None
            if response.status_code >= 500 or response.status_code == 429:
                failure = f"HTTP {response.status_code}"
                continue
            if response.status_code != 200:
                raise UserError(f"solution {item.id!r}: the PRM server refused the request (HTTP "
                                f"{response.status_code}: {response.text[:300]}); check --prm-model and the server")
            try:  # bounded: an answer nested 5,000 deep is a RecursionError for json.loads
                answer = loads_bounded(response.content)
            except JsonRefused as exc:
                raise PRMServerError(f"solution {item.id!r}: the PRM server's answer {exc}") from None
            except ValueError:
                raise PRMServerError(f"solution {item.id!r}: the PRM server's answer is not JSON") from None
            try:
                scores = step_scores_of(answer, len(item.steps))
            except PRMServerError as exc:
                raise PRMServerError(f"solution {item.id!r}: {exc}") from None
            if self.cache is not None:
                self.cache.put(key, json.dumps(scores), {}, 0.0)
            return scores
        raise ProviderUnreachable(f"the PRM server at {public_host(self.url)} did not answer ({failure}, {ATTEMPTS} "
                                  "tries); start it (README: `vllm serve ...`) and run the same command again")
