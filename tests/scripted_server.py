"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, so tests run the real litellm -> HTTP path."""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Self


@dataclass
class Reply:
    """One scripted reply: a chat answer (`content`), or an HTTP error (`status` with `error` text)."""

    content: str | None = None
    status: int = 200
    error: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 100
    completion_tokens: int = 50
    drip: float = 0.0
    """Seconds between bytes of the body (a server that trickles its answer); 0: sent at once."""
    pad: int = 0
    """Spaces added inside the JSON body (a large answer that is still a valid completion)."""
    declare_length: bool = True
    """Send a Content-Length; without one the body ends when the server closes the connection."""


POLL_INTERVAL = 0.01  # seconds between serve_forever's shutdown checks (the stdlib default, 0.5, is test teardown)

Script = Callable[[dict[str, Any]], "Reply | str"]


class _QuietServer(ThreadingHTTPServer):
    """Tests cancel requests in flight (a failed write, a budget): a client that hung up is expected, not printed."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def write_counted(stream: Any, data: bytes, drip: float) -> int:
    """`write_slowly`, in 64 KB pieces when not dripping; the bytes written before the client hung up (if it did)."""
    if drip:
        write_slowly(stream, data, drip)
        return len(data)
    written = 0
    try:
        for start in range(0, len(data), 65536):
            stream.write(data[start:start + 65536])
            written = min(len(data), start + 65536)
    except ConnectionError:
        pass
    return written


def write_slowly(stream: Any, data: bytes, drip: float) -> None:
    """Write `data`, one byte each `drip` seconds when `drip` is set (until the client hangs up)."""
    if not drip:
        stream.write(data)
        return
    for index in range(len(data)):
        stream.write(data[index:index + 1])
        stream.flush()
        time.sleep(drip)


class LoopbackServer:
    """An HTTP server on 127.0.0.1 (a free port) run in a thread: `start()`, `stop()`, `api_base`."""

    def _serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.httpd = _QuietServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.api_base = f"http://127.0.0.1:{self.port}/v1"
        # A short poll so that stop() (httpd.shutdown waits for the loop's next poll) takes ~10 ms, not 0.5 s.
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": POLL_INTERVAL},
                                        daemon=True)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(5)


class ScriptedServer(LoopbackServer):
    """Answers each POST to /v1/chat/completions from `script(request_json)`; records every request."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.bodies: list[tuple[int, int]] = []
        """(bytes written, bytes of the body) of every reply: fewer written when the client hung up before the end."""
        self.client = "auto"
        """The LLM client the test runs through (set by the fixture)."""
        self.script: Script = lambda request: Reply(status=500, error="no script set")
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                reply = server.script(body)
                if isinstance(reply, str):
                    reply = Reply(content=reply)
                if reply.status != 200:
                    payload = {"error": {"message": reply.error, "type": "scripted", "code": reply.status}}
                else:
                    payload = {
                        "id": "chatcmpl-scripted",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", "scripted"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": reply.content}}],
                        "usage": {"prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
                                  "total_tokens": reply.prompt_tokens + reply.completion_tokens},
                    }
                data = json.dumps(payload).encode()
                if reply.pad:
                    data = data[:-1] + b" " * reply.pad + data[-1:]
                self.send_response(reply.status)
                self.send_header("content-type", "application/json")
                if reply.declare_length:
                    self.send_header("content-length", str(len(data)))
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                written = write_counted(self.wfile, data, reply.drip)
                with server._lock:
                    server.bodies.append((written, len(data)))

        self._serve(Handler)

    def replies_sent(self, count: int, within: float = 30.0) -> list[tuple[int, int]]:
        """`bodies` once `count` replies are recorded: a reply is recorded after its last write, which can end after
        the client has hung up and the test has moved on. Waits at most `within` seconds (then returns what is)."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.bodies) >= count:
                    break
            time.sleep(0.01)
        with self._lock:
            return list(self.bodies)

    def reply_in_order(self, replies: list["Reply | str"]) -> None:
        """Serve these replies one per request, in order (then fail with 500)."""
        queue = list(replies)

        def script(request: dict[str, Any]) -> "Reply | str":
            with self._lock:
                return queue.pop(0) if queue else Reply(status=500, error="script exhausted")

        self.script = script
