"""Provider batch APIs (`inject run --batch`): the same units, sent as batch files through litellm's files and
batches API (OpenAI-compatible providers, Azure, Vertex, Bedrock where litellm supports them).

The run loop collects requests and calls `flush` when every worker waits (`Engine.collects_batches`). A flush
splits the requests into chunks within the provider's limits, submits each chunk as one batch carrying metadata
that names the run and the chunk, records the batch in `RUN/batches.jsonl`, polls with backoff, and answers each
request from the output file. A line that failed or expired (and only such a line) is resubmitted in a later
batch; an answer that fails validation is re-asked by the unit as usual, and the re-ask goes into the next round.

No request is ever submitted twice: a chunk's intent (its uploaded file and requests) is recorded before its batch
is created; a later flush finds an intent with no outcome (a kill between "create" and "record" leaves exactly that)
among the provider's batches by its file or chunk metadata and records that batch, whatever the requests waiting
then; and a request a recorded batch holds is collected from it, not sent again. With `wait=False` (`--no-wait`)
the flush submits what is new and stops the run (`BatchesPending`); the same command later collects.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from injector.engines.cache import request_key
from injector.engines.limits import RateLimiter
from injector.util.errors import AuthenticationRefused, BatchesPending, UserError
from injector.records.directory import RunDirectory
from injector.records.jsonl import read_jsonl
from injector.util.redaction import redact
from injector.taxonomy import Category
from injector.model.trajectory import Trajectory
from injector.util.json_bounds import MAX_ANSWER_BYTES, loads_bounded
from injector.engines.base import Proposal, ProviderError, TransientProviderError
from injector.engines.llm import LLMEngine, classify_provider_error, import_litellm
from injector.engines.batch_log import (BATCHES_FILE, NOT_ADOPTABLE, TERMINAL, BatchLog, batch_counts, batch_table,
                                        line_outcome, read_batch_log)
from injector.engines.model_info import listed_prices, per_token, provider_of
from injector.engines.settings import (DEFAULT_MAX_BYTES, DEFAULT_MAX_REQUESTS, DEFAULT_POLL_SECONDS, BatchSettings,
                                       EngineSettings)

MAX_POLL_SECONDS = 600.0
ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
BATCH_PROVIDERS = ("openai", "azure", "vertex_ai", "bedrock", "hosted_vllm")
"""Providers litellm 1.110's `acreate_batch` takes."""
LIST_PAGE, LIST_PAGES = 100, 100



@dataclass
class _Waiting:
    request: dict[str, Any]
    futures: list[asyncio.Future] = field(default_factory=list)


class BatchEngine(LLMEngine):
    """An `LLMEngine` that sends its requests as provider batches (see the module's docstring)."""

    collects_batches = True

    def __init__(self, model: str, *, run_dir: str | Path, max_requests: int = DEFAULT_MAX_REQUESTS,
                 max_bytes: int = DEFAULT_MAX_BYTES, poll_seconds: float = DEFAULT_POLL_SECONDS,
                 max_poll_seconds: float = MAX_POLL_SECONDS, wait: bool = True, **options: Any):
        super().__init__(model, **options, client="litellm")  # the files and batches API is litellm's
        self.run_dir = RunDirectory(run_dir)
        self.max_requests, self.max_bytes = max_requests, max_bytes
        self.poll_seconds, self.max_poll_seconds, self.wait = poll_seconds, max_poll_seconds, wait
        self._waiting: dict[str, _Waiting] = {}
        self._log: BatchLog | None = None
        self._results: dict[str, dict[str, tuple[str, Any]]] = {}
        """batch id -> custom_id -> ("ok", completion body) | ("retry", why) | ("fail", why), once downloaded."""
        self.submitted_batches = 0
        """Batches this engine created (not adopted), for the summary."""

    @property
    def run_name(self) -> str:
        """The run as batch metadata names it: the run directory's name."""
        return self.run_dir.path.resolve().name

    def check_ready(self) -> None:
        provider = self._provider()[1]  # UnroutableModel (exit 2) for a model string litellm cannot route
        if provider not in BATCH_PROVIDERS:
            raise UserError(f"--batch: litellm has no batch API for {provider!r} models ({self.model}); it has one "
                            f"for {', '.join(BATCH_PROVIDERS)}. Run without --batch")
        super().check_ready()

    def _provider(self) -> tuple[str, str]:
        """(the model as the provider names it, litellm's provider name)."""
        return provider_of(self.model, self.api_base)

    def _connection(self) -> dict[str, Any]:
        connection: dict[str, Any] = {"custom_llm_provider": self._provider()[1]}
        if self.api_base:
            connection["api_base"] = self.api_base
        if self._api_key:
            connection["api_key"] = self._api_key
        return connection

    def prices(self) -> tuple[float, float] | None:
        """`--price-in/--price-out` when given, else litellm's batch prices for the model, else unknown."""
        return per_token(self.price_in, self.price_out) or listed_prices(self.model, batches=True)

    async def propose(self, messages: list[dict[str, Any]], *, trajectory: Trajectory, category: Category,
                      seed: int, sample: int, response_schema: dict[str, Any] | None, output_mode: str = "edits",
                      read_cache: bool = True) -> Proposal:
        """File the request for the next batch (or answer it from the cache) and wait for `flush` to answer it."""
        request = self.request(messages, seed + sample, response_schema, f"{category.id}_answer")
        key = request_key(request)
        if self.cache and read_cache and (hit := self.cache.get(key)):
            return Proposal(text=hit["text"], usage={}, cost=0.0, details={"cached": True})
        future: asyncio.Future[Proposal] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(key, _Waiting(request)).futures.append(future)
        return await future

    async def flush(self) -> None:
        """Submit, poll and collect every request filed so far; every one ends answered or failed."""
        waiting, self._waiting = self._waiting, {}
        if not waiting:
            return
        task = asyncio.current_task()
        if task is not None and getattr(task, "cancelling", lambda: 0)():
            # Called from the clean-up of a cancelled worker (Ctrl-C): a cancelled task is not cancelled twice, so a
            # wait begun now would never stop. The requests stay with the provider (recorded) for a resume.
            for entry in waiting.values():
                for future in entry.futures:
                    future.cancel()
            return
        entries = list(waiting.values())  # _settle pops what it answers: a failure midway must still reach those
        try:
            await self._settle(waiting)
        except BaseException as exc:  # every waiting unit learns why (a refused key stops the run through them)
            for entry in entries:
                for future in entry.futures:
                    if not future.done() and isinstance(exc, Exception):
                        future.set_exception(exc)
                    elif not future.done():
                        future.cancel()  # Ctrl-C or a cancelled task: the batches stay recorded for a resume
            if not isinstance(exc, Exception):
                raise

    def _log_now(self) -> BatchLog:
        if self._log is None:
            self._log = read_batch_log(self.run_dir.path)
        return self._log

    def _record(self, record: dict[str, Any]) -> None:
        record = {**record, "time": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        self.run_dir.append_line(BATCHES_FILE, record)
        self._log_now().add(record)

    async def _settle(self, waiting: dict[str, _Waiting]) -> None:
        log = self._log_now()
        await self._recover()
        resubmit: set[str] = set()
        delay = self.poll_seconds
        while waiting:
            for batch_id in sorted({log.holder[k] for k in waiting if k in log.holder and k not in resubmit}):
                results = await self._collect(batch_id)
                if results is None:
                    continue  # still running
                for key in [k for k in waiting if log.holder.get(k) == batch_id and k not in resubmit]:
                    outcome, value = results.get(key, ("retry", f"not answered by batch {batch_id}"))
                    if outcome == "ok":
                        self._answer(waiting.pop(key), key, value, batch_id)
                    elif outcome == "fail":
                        _fail(waiting.pop(key), ProviderError(f"batch {batch_id}: {value}"))
                    else:
                        resubmit.add(key)
            new = sorted(k for k in waiting if k not in log.holder or k in resubmit)
            for key in [k for k in new if log.submissions[k] >= self.transient_attempts]:
                _fail(waiting.pop(key), TransientProviderError(
                    f"failed in {log.submissions[key]} batches; run the same command again to retry it"))
                new.remove(key)
            if new:
                await self._submit(new, waiting)
                resubmit.difference_update(new)
                delay = self.poll_seconds
            if not waiting:
                break
            if not self.wait:
                held = {log.holder[k] for k in waiting}
                error = BatchesPending(f"{len(waiting)} requests in {len(held)} batches are with the provider; run "
                                       "the same command again to collect them (`inject status RUN` shows them)")
                for entry in waiting.values():
                    _fail(entry, error)
                return
            await asyncio.sleep(delay + random.uniform(0, delay / 10))
            delay = min(self.max_poll_seconds, max(delay * 1.5, 0.0))

    def _answer(self, entry: _Waiting, key: str, body: dict[str, Any], batch_id: str) -> None:
        usage = body.get("usage")
        usage_dict = {name: _token_count(usage.get(name) if isinstance(usage, dict) else None)
                      for name in ("prompt_tokens", "completion_tokens")}
        prices = self.prices()
        cost = None if prices is None else usage_dict["prompt_tokens"] * prices[0] + \
            usage_dict["completion_tokens"] * prices[1]
        try:
            text = body["choices"][0]["message"]["content"] or ""
        except (KeyError, IndexError, TypeError):
            text = None
        if not isinstance(text, str):  # a list or an object is no answer text either
            _fail(entry, ProviderError(f"batch {batch_id}: an answer without a text choices[0].message.content"))
            return
        if self.cache:
            self.cache.put(key, text, usage_dict, cost)
        for future in entry.futures:
            if not future.done():
                future.set_result(Proposal(text=text, usage=usage_dict, cost=cost, details={"batch": batch_id}))

    async def _collect(self, batch_id: str) -> dict[str, tuple[str, Any]] | None:
        """The outcome of every line of a finished batch (downloaded once), or None while it runs."""
        if batch_id in self._results:
            return self._results[batch_id]
        litellm = import_litellm()
        # litellm's own success logging would download a finished batch's output a second time (to price it) and
        # parse it outside our bounds, in a background task whose failures no one sees: we price every line here.
        batch = await self._call(litellm.aretrieve_batch, batch_id=batch_id,
                                 litellm_metadata={"batch_ignore_default_logging": True})
        status = str(batch.status)
        if self._log_now().status(batch_id) != status:
            self._record({"event": "state", "batch_id": batch_id, "status": status,
                          "counts": batch_counts(batch), "output_file_id": batch.output_file_id,
                          "error_file_id": batch.error_file_id})
        if status not in TERMINAL:
            return None
        results: dict[str, tuple[str, Any]] = {}
        if batch.error_file_id:
            for line in await self._lines(batch.error_file_id):
                results[str(line.get("custom_id"))] = line_outcome(line)
        if batch.output_file_id:
            for line in await self._lines(batch.output_file_id):
                results[str(line.get("custom_id"))] = line_outcome(line)
        self._results[batch_id] = results
        return results

    async def _lines(self, file_id: str) -> list[dict[str, Any]]:
        content = await self._call(import_litellm().afile_content, file_id=file_id)
        lines = []
        for raw in content.content.splitlines():
            try:
                line = loads_bounded(raw, max_bytes=MAX_ANSWER_BYTES * 2)
            except ValueError:  # malformed, not UTF-8, too deep, too long, or a huge integer
                continue  # an unreadable line answers nothing: its request is resubmitted
            if isinstance(line, dict):
                lines.append(line)
        return lines

    async def _submit(self, keys: list[str], waiting: dict[str, _Waiting]) -> None:
        """Submit `keys` (sorted) in chunks within the limits: upload each chunk's file, record the intent to make a
        batch of it (write-ahead: a kill from here on leaves the intent for `_recover`), create the batch, record
        it."""
        log, litellm = self._log_now(), import_litellm()
        provider_model = self._provider()[0]
        for chunk_keys, data in self._chunks(keys, waiting, provider_model):
            number = 1 + max(log.submissions[k] for k in chunk_keys)
            chunk = hashlib.sha256(("\n".join(chunk_keys) + f"\n#{number}").encode()).hexdigest()[:16]
            file = await self._call(litellm.acreate_file, file=("requests.jsonl", data), purpose="batch")
            intent = {"run": self.run_name, "chunk": chunk, "input_file_id": str(file.id), "submission": number,
                      "requests": len(chunk_keys), "bytes": len(data), "keys": chunk_keys}
            self._record({"event": "intent", **intent})
            batch = await self._call(litellm.acreate_batch, completion_window=COMPLETION_WINDOW,
                                     endpoint=ENDPOINT, input_file_id=file.id,
                                     metadata={"inject_run": self.run_name, "inject_chunk": chunk})
            self.submitted_batches += 1
            self._record({"event": "submitted", "batch_id": str(batch.id), "status": str(batch.status),
                          "adopted": False, **intent})

    async def _recover(self) -> None:
        """Settle the intents a kill left between "create" and "record": the provider's batch made from the
        intent's file (or carrying its chunk) is recorded as submitted, so its requests are collected from it and
        never sent again; an intent the provider has no batch of is recorded as abandoned (its file cost nothing)."""
        log = self._log_now()
        unsettled = log.unsettled()
        if not unsettled:
            return
        found: dict[str, Any] = {}
        async for batch in self._run_batches():
            file_id = str(getattr(batch, "input_file_id", None) or "")
            chunk = str((getattr(batch, "metadata", None) or {}).get("inject_chunk"))
            for intent in unsettled:
                if file_id == intent["input_file_id"] or chunk == intent.get("chunk"):
                    found.setdefault(intent["input_file_id"], batch)  # newest first: the newest wins
            if len(found) == len(unsettled):
                break
        for intent in unsettled:
            batch = found.get(intent["input_file_id"])
            if batch is None:
                self._record({"event": "abandoned", "input_file_id": intent["input_file_id"]})
            else:
                record = {name: value for name, value in intent.items() if name not in ("event", "time")}
                self._record({"event": "submitted", "batch_id": str(batch.id), "status": str(batch.status),
                              "adopted": True, **record})

    def _chunks(self, keys: list[str], waiting: dict[str, _Waiting],
                provider_model: str) -> list[tuple[list[str], bytes]]:
        chunks: list[tuple[list[str], bytes]] = []
        current: list[str] = []
        lines: list[bytes] = []
        size = 0
        for key in keys:
            body = {name: value for name, value in waiting[key].request.items() if name != "api_base"}
            body["model"] = provider_model
            line = (json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": body},
                               ensure_ascii=False) + "\n").encode()
            if len(line) > self.max_bytes:
                _fail(waiting.pop(key), ProviderError(f"the request is {len(line)} bytes, more than a batch file "
                                                      f"may hold (--batch-max-bytes {self.max_bytes})"))
                continue
            if current and (len(current) >= self.max_requests or size + len(line) > self.max_bytes):
                chunks.append((current, b"".join(lines)))
                current, lines, size = [], [], 0
            current.append(key)
            lines.append(line)
            size += len(line)
        if current:
            chunks.append((current, b"".join(lines)))
        return chunks

    async def _run_batches(self) -> AsyncIterator[Any]:
        """The provider's batches of this run that may still answer (not failed or cancelled), newest first, over
        every page listed."""
        litellm = import_litellm()
        after = None
        for _ in range(LIST_PAGES):
            page = await self._call(litellm.alist_batches, limit=LIST_PAGE, **({"after": after} if after else {}))
            data = list(getattr(page, "data", None) or [])
            for batch in data:
                metadata = getattr(batch, "metadata", None) or {}
                if metadata.get("inject_run") == self.run_name and str(batch.status) not in NOT_ADOPTABLE:
                    yield batch
            if not data or not getattr(page, "has_more", False):
                break
            after = data[-1].id

    async def _call(self, function: Callable[..., Any], **arguments: Any) -> Any:
        """One call of litellm's files/batches API, with transient faults retried (429, 5xx, connection)."""
        litellm = import_litellm()
        for attempt in range(1, self.transient_attempts + 1):
            try:
                # litellm's timeout restarts with every byte read (a file download too): the deadline is ours.
                return await asyncio.wait_for(function(**arguments, **self._connection()), self.timeout)
            except Exception as exc:  # noqa: BLE001 - every litellm exception is classified (and redacted) here
                error = _deadline_missed(self.timeout) if isinstance(exc, asyncio.TimeoutError) \
                    else classify_provider_error(litellm, exc)
                if isinstance(error, AuthenticationRefused) or not isinstance(error, TransientProviderError) \
                        or attempt == self.transient_attempts:
                    raise error from exc
                self.retries += 1
                await asyncio.sleep(self._retry_delay(error, attempt))
        raise AssertionError("unreachable")


def _deadline_missed(seconds: float) -> TransientProviderError:
    return TransientProviderError(f"no complete answer within {seconds:g} s (timeout)")


def _token_count(value: Any) -> int:
    """A usage count as the provider wrote it; anything but a plain non-negative number counts as 0 (unknown)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e12:
        return 0
    return int(value)


def _fail(entry: _Waiting, error: Exception) -> None:
    for future in entry.futures:
        if not future.done():
            future.set_exception(error)


async def cancel_batches(engine: BatchEngine) -> list[tuple[str, str]]:
    """Cancel every batch of the engine's run directory that is not finished; (batch id, new status) each."""
    await engine._recover()  # a batch a kill left unrecorded is cancelled too
    log = engine._log_now()
    litellm = import_litellm()
    cancelled = []
    for batch_id in log.submitted:
        if log.status(batch_id) in TERMINAL:
            continue
        batch = await engine._call(litellm.acancel_batch, batch_id=batch_id)
        engine._record({"event": "state", "batch_id": batch_id, "status": str(batch.status),
                        "counts": batch_counts(batch)})
        cancelled.append((batch_id, str(batch.status)))
    return cancelled


def from_settings(settings: EngineSettings) -> BatchEngine:
    """The `batch` kind's factory (`registry.py`)."""
    assert settings.model is not None and settings.batch is not None  # the settings' validation sees to both
    batch = settings.batch
    return BatchEngine(settings.model, api_base=settings.api_base, limiter=RateLimiter(settings.rpm, settings.tpm),
                       run_dir=batch.run_dir, max_requests=batch.max_requests, max_bytes=batch.max_bytes,
                       poll_seconds=batch.poll_seconds, wait=batch.wait, **settings.llm_options())
