"""A fake OpenAI-compatible chat-completions provider on 127.0.0.1, for the run-loop benchmarks.

An asyncio HTTP/1.1 server (keep-alive, one coroutine per connection, so hundreds of concurrent connections cost
no threads) that answers `POST /v1/chat/completions` with a valid counterfactual injection of the trajectory in the
prompt: it parses `<question>` and `<steps>` (the JSON list rendered by prompts/_base.j2) from the first user
message, changes one number in one step and declares that step. It answers in the form the request asks for: the
edit form (`{"question", "edits": [{"op": "replace", ...}], "reason"}`) when the response schema has `edits` or the
prompt asks for "your edits", else the full form (`modified_question`, `modified_process`, `modified_steps`,
`error_steps`, `reason`). It can inject, each with a probability per request:

    latency            seconds before every answer (and before 5xx; 429s are immediate)
    jitter             latency is drawn uniformly from latency +- jitter (a real provider's spread)
    rpm                a sliding 60 s window of accepted requests; beyond it, 429 with Retry-After (seconds until
                       the oldest accepted request leaves the window, rounded up)
    p429               429 with `Retry-After: retry_after` (a provider that is simply overloaded)
    p500               500
    ptimeout           hang `hang` seconds (longer than the client's --timeout), then answer
    pmalformed         an answer that is malformed JSON (a valid answer cut in the middle)
    pschema            valid JSON of the wrong shape
    pundeclared        full form: a second step changed but not declared (`undeclared_change`); edit form, where
                       an undeclared change cannot be expressed: the change marked `"error": false`, so the answer
                       has no error step (`no_error_steps`)
    pbadbody           an HTTP 200 whose body is not JSON at all (a broken proxy)
    reject_fraction    the fraction of trajectories (by a hash of the question) that always get undeclared changes
    judge              1: answer every request as `inject verify`'s judge does, `{"first_error_step": -1, "reason"}`
                       (an instant judge that finds no error: bench/scale.py's verify stage)

A request with no messages (curator's start-up probe) gets a short answer and is counted as `probe`, not as a
request; a message whose content is a list of text parts (data-designer's) is read joined.

Control endpoints (JSON): `GET /_stats` (counts, in-flight peak, times of accepted answers), `POST /_config`
(set any of the settings above; `{"reset": true}` also clears the counts), `POST /_reset`.

    python bench/fake_provider.py --port 0 --latency 2.0     # prints "listening http://127.0.0.1:PORT/v1"

`ProviderProcess` runs it in a subprocess (its own interpreter: the provider never shares a GIL with the client
being measured); `measure_capacity` drives it with a lean raw-socket client to show it is not the bottleneck.
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import hashlib
import json
import math
import random
import re
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

STEPS_RE = re.compile(r"<steps>\n(.*)\n</steps>", re.S)
QUESTION_RE = re.compile(r"<question>\n(.*?)\n</question>", re.S)
NUMBER_RE = re.compile(r"\d+")
WINDOW_SECONDS = 60.0
JUDGE_ANSWER = json.dumps({"first_error_step": -1, "reason": "Every step follows from the previous ones."})


@dataclass
class Settings:
    latency: float = 0.0
    jitter: float = 0.0
    rpm: float | None = None
    p429: float = 0.0
    retry_after: float = 1.0
    p500: float = 0.0
    ptimeout: float = 0.0
    hang: float = 30.0
    pmalformed: float = 0.0
    pschema: float = 0.0
    pundeclared: float = 0.0
    pbadbody: float = 0.0
    reject_fraction: float = 0.0
    judge: float = 0.0
    seed: int = 0


# --------------------------------------------------------------------------------------------- answers

def message_text(content: Any) -> str:
    """A message's text: a string as it is, a list of parts (data-designer sends `[{"type": "text", "text": ...}]`)
    joined; anything else as JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(part, dict) for part in content):
        return "".join(str(part.get("text", "")) for part in content if part.get("type", "text") == "text")
    return json.dumps(content)


def parse_prompt(body: dict[str, Any]) -> tuple[str, list[str], bool]:
    """The question and steps of the trajectory, from the first user message (re-asks append later turns), and
    whether the request asks for the edit form."""
    user = next(m for m in body["messages"] if m.get("role") == "user")
    content = message_text(user["content"])
    steps = json.loads(STEPS_RE.search(content).group(1))
    question = QUESTION_RE.search(content).group(1)
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema") or {}
    edits = "edits" in (schema.get("properties") or {}) or "of your edits only" in content
    return question, steps, edits


def bump_number(step: str) -> str:
    """The step with its last number changed (after an `=` when there is one): a false, declared value."""
    numbers = list(NUMBER_RE.finditer(step))
    after_equals = [m for m in numbers if "=" in step[: m.start()]]
    match = (after_equals or numbers)[-1] if numbers else None
    if match is None:
        return step + " This gives 7."
    return step[: match.start()] + str(int(match.group()) + 1) + step[match.end():]


def error_step_index(steps: list[str]) -> int:
    """0-based index of the step to change: the first one with `=` and a number, else the first with a number."""
    for k, step in enumerate(steps):
        if "=" in step and NUMBER_RE.search(step):
            return k
    for k, step in enumerate(steps):
        if NUMBER_RE.search(step):
            return k
    return 0


def valid_answer(question: str, steps: list[str]) -> dict[str, Any]:
    k = error_step_index(steps)
    modified = list(steps)
    modified[k] = bump_number(steps[k])
    return {"modified_question": question, "modified_process": modified, "modified_steps": [k + 1],
            "error_steps": [k + 1], "reason": f"Step {k + 1} states a value that does not follow from the numbers."}


def as_edits(answer: dict[str, Any], steps: list[str]) -> dict[str, Any]:
    """A full-form answer of ours in the edit form: one replace per changed step, `error` as declared."""
    edits = []
    for k, (old, new) in enumerate(zip(steps, answer["modified_process"])):
        if old != new:
            error = k + 1 in answer["error_steps"] and k + 1 in answer["modified_steps"]
            edits.append({"op": "replace", "step": k + 1, "after": None, "text": new, "error": error,
                          "explanation": "The value does not follow from the numbers." if error else None})
    return {"question": None, "edits": edits, "reason": answer["reason"]}


def undeclared_edits(question: str, steps: list[str]) -> dict[str, Any]:
    answer = as_edits(valid_answer(question, steps), steps)
    for edit in answer["edits"]:
        edit["error"], edit["explanation"] = False, None
    return answer


def undeclared_answer(question: str, steps: list[str]) -> dict[str, Any]:
    answer = valid_answer(question, steps)
    k = answer["error_steps"][0] - 1
    others = [j for j in range(len(steps)) if j != k]
    if others:  # a second step changed, not declared
        j = others[0]
        answer["modified_process"][j] = steps[j] + " We keep this in mind."
    else:
        answer["modified_steps"] = []
    return answer


# --------------------------------------------------------------------------------------------- server

class FakeProvider:
    def __init__(self, settings: Settings):
        self.settings = settings
        self.rng = random.Random(settings.seed)
        self.reset()

    def reset(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.in_flight = 0
        self.peak_in_flight = 0
        self.connections = 0
        self.first_request: float | None = None
        self.last_request: float | None = None
        self.ok_times: list[float] = []
        self.window: collections.deque[float] = collections.deque()

    def configure(self, values: dict[str, Any]) -> None:
        known = {f.name for f in fields(Settings)}
        for key, value in values.items():
            if key == "reset":
                continue
            if key not in known:
                raise ValueError(f"unknown setting {key!r}")
            setattr(self.settings, key, value)
        if "seed" in values:
            self.rng = random.Random(self.settings.seed)
        if values.get("reset"):
            self.reset()

    def stats(self) -> dict[str, Any]:
        return {"counts": dict(self.counts), "requests": self.counts["requests"], "peak_in_flight": self.peak_in_flight,
                "in_flight": self.in_flight, "connections": self.connections, "first_request": self.first_request,
                "last_request": self.last_request, "ok_times": self.ok_times, "now": time.monotonic(),
                "settings": asdict(self.settings)}

    def poisoned(self, question: str) -> bool:
        fraction = self.settings.reject_fraction
        if fraction <= 0:
            return False
        digest = int(hashlib.sha256(question.encode()).hexdigest()[:8], 16)
        return digest / 0xFFFFFFFF < fraction

    async def chat(self, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        s = self.settings
        now = time.monotonic()
        if not body.get("messages"):  # curator's start-up probe: answered, and kept out of the counts and times
            self.counts["probe"] += 1
            return 200, {"content-type": "application/json"}, json.dumps(completion(body, "ok", 0, "probe")).encode()
        self.counts["requests"] += 1
        self.first_request = self.first_request if self.first_request is not None else now
        self.last_request = now
        if s.rpm:
            while self.window and self.window[0] <= now - WINDOW_SECONDS:
                self.window.popleft()
            if len(self.window) >= s.rpm:
                self.counts["429_rpm"] += 1
                wait = max(1, math.ceil(self.window[0] + WINDOW_SECONDS - now))
                return error(429, "rate limit: requests per minute exceeded", {"retry-after": str(wait)})
            self.window.append(now)
        draw = self.rng.random()
        edges = [("429", s.p429), ("500", s.p500), ("timeout", s.ptimeout), ("badbody", s.pbadbody),
                 ("malformed", s.pmalformed), ("schema", s.pschema), ("undeclared", s.pundeclared)]
        fault = None
        for name, probability in edges:
            if draw < probability:
                fault = name
                break
            draw -= probability
        if fault == "429":
            self.counts["429_random"] += 1
            return error(429, "overloaded, slow down", {"retry-after": f"{s.retry_after:g}"})
        if fault == "timeout":
            self.counts["timeout"] += 1
            await asyncio.sleep(s.hang)
        elif s.latency > 0:
            await asyncio.sleep(max(0.0, s.latency + self.rng.uniform(-s.jitter, s.jitter)) if s.jitter else s.latency)
        if fault == "500":
            self.counts["500"] += 1
            return error(500, "internal error")
        if fault == "badbody":
            self.counts["badbody"] += 1
            return 200, {"content-type": "application/json"}, b"<html>502 Bad Gateway</html>"
        if s.judge:
            self.counts["judge"] += 1
            answer = completion(body, JUDGE_ANSWER, 0, "judge")
            return 200, {"content-type": "application/json"}, json.dumps(answer).encode()
        question, steps, edits = parse_prompt(body)
        self.counts["edit_form" if edits else "full_form"] += 1
        if self.poisoned(question):
            fault = "poisoned"

        def good() -> dict[str, Any]:
            answer = valid_answer(question, steps)
            return as_edits(answer, steps) if edits else answer

        if fault in ("undeclared", "poisoned"):
            answer = undeclared_edits(question, steps) if edits else undeclared_answer(question, steps)
            text = json.dumps(answer, ensure_ascii=False)
        elif fault == "malformed":
            full = json.dumps(good(), ensure_ascii=False)
            text = full[: len(full) // 2]  # cut in the middle: not a complete JSON object
        elif fault == "schema":
            text = json.dumps({"question": 3, "edits": "replace step 2", "modified_process": "\n".join(steps),
                               "modified_steps": "one", "error_steps": None})
        else:
            text = json.dumps(good(), ensure_ascii=False)
        self.counts[fault or "ok"] += 1
        if fault is None:
            self.ok_times.append(time.monotonic())
        prompt_chars = sum(len(message_text(m.get("content", ""))) for m in body["messages"])
        payload = completion(body, text, prompt_chars, str(self.counts["requests"]))
        return 200, {"content-type": "application/json"}, json.dumps(payload).encode()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, path, version = (lines[0].split(" ") + ["", "", ""])[:3]
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        key, _, value = line.partition(":")
                        headers[key.strip().lower()] = value.strip()
                length = int(headers.get("content-length", 0) or 0)
                data = await reader.readexactly(length) if length else b""
                keep_alive = headers.get("connection", "").lower() != "close" and version == "HTTP/1.1"
                self.in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
                try:
                    status, extra, body = await self.route(method, path.split("?")[0], data)
                finally:
                    self.in_flight -= 1
                reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests",
                          500: "Internal Server Error"}.get(status, "Error")
                head_out = [f"HTTP/1.1 {status} {reason}", f"content-length: {len(body)}"]
                head_out += [f"{k}: {v}" for k, v in extra.items()]
                if not keep_alive:
                    head_out.append("connection: close")
                writer.write(("\r\n".join(head_out) + "\r\n\r\n").encode("latin-1") + body)
                try:
                    await writer.drain()
                except ConnectionError:
                    return
                if not keep_alive:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            writer.close()

    async def route(self, method: str, path: str, data: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            if method == "POST" and path.endswith("/chat/completions"):
                return await self.chat(json.loads(data))
            if method == "GET" and path == "/_stats":
                return 200, {"content-type": "application/json"}, json.dumps(self.stats()).encode()
            if method == "POST" and path == "/_config":
                self.configure(json.loads(data or b"{}"))
                return 200, {"content-type": "application/json"}, json.dumps(asdict(self.settings)).encode()
            if method == "POST" and path == "/_reset":
                self.reset()
                return 200, {"content-type": "application/json"}, b"{}"
            return error(404, f"no route {method} {path}")
        except Exception as exc:  # a bug in the fake (or a request it cannot parse): say so, never hang
            self.counts["fake_error"] += 1
            return error(400, f"fake provider: {type(exc).__name__}: {exc}")


def completion(body: dict[str, Any], text: str, prompt_chars: int, suffix: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{suffix}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "bench"),
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(text) // 4,
                  "total_tokens": prompt_chars // 4 + len(text) // 4},
    }


def error(status: int, message: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    payload = {"error": {"message": message, "type": "fake_provider", "code": status}}
    return status, {"content-type": "application/json", **(headers or {})}, json.dumps(payload).encode()


async def serve(settings: Settings, port: int) -> None:
    provider = FakeProvider(settings)
    server = await asyncio.start_server(provider.handle, "127.0.0.1", port, backlog=1024, limit=2**24)
    actual = server.sockets[0].getsockname()[1]
    print(f"listening http://127.0.0.1:{actual}/v1", flush=True)
    async with server:
        await server.serve_forever()


# --------------------------------------------------------------------------------------------- control

class ProviderProcess:
    """The fake provider in a subprocess; `with ProviderProcess(latency=2.0) as p: p.api_base ...`."""

    def __init__(self, **settings: Any):
        self.settings = settings
        self.process: subprocess.Popen | None = None
        self.api_base = ""

    def __enter__(self) -> "ProviderProcess":
        args = [sys.executable, str(Path(__file__).resolve()), "--port", "0"]
        for key, value in self.settings.items():
            if value is None:
                continue
            args += [f"--{key.replace('_', '-')}", str(value)]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening "):
            self.process.kill()
            raise RuntimeError(f"fake provider did not start: {line!r}")
        self.api_base = line.split()[1]
        self.root = self.api_base.rsplit("/v1", 1)[0]
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)

    def _call(self, method: str, path: str, payload: dict | None = None) -> dict[str, Any]:
        data = json.dumps(payload).encode() if payload is not None else None
        request = urllib.request.Request(self.root + path, data=data, method=method,
                                         headers={"content-type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())

    def configure(self, **values: Any) -> dict[str, Any]:
        return self._call("POST", "/_config", values)

    def stats(self) -> dict[str, Any]:
        return self._call("GET", "/_stats")

    def reset(self) -> None:
        self._call("POST", "/_reset", {})


async def _raw_client(api_base: str, bodies: list[bytes], concurrency: int) -> float:
    """Send every body over `concurrency` keep-alive connections with a minimal HTTP client; seconds taken."""
    host, port = api_base.split("//")[1].split("/")[0].split(":")
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in bodies:
        queue.put_nowait(body)

    async def connection() -> None:
        reader, writer = await asyncio.open_connection(host, int(port))
        while not queue.empty():
            body = queue.get_nowait()
            writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                         + f"content-length: {len(body)}\r\n\r\n".encode() + body)
            head = await reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"content-length: (\d+)", head, re.I).group(1))
            await reader.readexactly(length)
        writer.close()

    start = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(concurrency)))
    return time.perf_counter() - start


def measure_capacity(api_base: str, bodies: list[bytes], concurrency: int) -> float:
    """Requests per second the provider serves to a lean raw-socket client (an upper bound for any client)."""
    return len(bodies) / asyncio.run(_raw_client(api_base, bodies, concurrency))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    for f in fields(Settings):
        kind = int if f.name == "seed" else float
        parser.add_argument(f"--{f.name.replace('_', '-')}", dest=f.name, type=kind, default=f.default)
    args = vars(parser.parse_args())
    port = args.pop("port")
    try:
        asyncio.run(serve(Settings(**args), port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
