"""A stub of OpenAI's files and batches API on 127.0.0.1, so tests (and bench/) run litellm's real batch path.

Files: upload (multipart), content. Batches: create (with metadata), retrieve, list (paged), cancel. A batch moves
validating -> in_progress -> completed one step per retrieve; `expire` names batches (by order of creation, from 0)
that end `expired` with half their lines answered and the rest in the error file (`batch_expired`);
`fails(custom_id, body, n)` says which lines fail (a 500 in the error file), n being how many batches have held that
custom_id so far. Every uploaded line is kept in `submitted`, in order.
"""
from __future__ import annotations

import json
import re
import threading
import time
from email.parser import BytesParser
from email.policy import default as default_policy
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

from scripted_server import LoopbackServer, write_slowly

Answer = Callable[[dict[str, Any]], str]
"""The chat answer (content) for a request body."""


class BatchServer(LoopbackServer):
    def __init__(self, answer: Answer, *, fails: Callable[[str, dict, int], bool] = lambda custom_id, body, n: False,
                 expire: set[int] | None = None,
                 rewrite: Callable[[dict[str, Any]], dict[str, Any]] = lambda row: row) -> None:
        self.answer, self.fails, self.expire = answer, fails, expire or set()
        self.rewrite = rewrite
        self.stall: int | None = None
        """Batches created from this one on (by order, from 0) stay in progress (a provider that takes its time)."""
        self.down = False
        """Every request is dropped unanswered (a provider outage) while set."""
        self.down_after_create = False
        """Go `down` right after the next batch is created."""
        self.drip = 0.0
        """Seconds between bytes of a file's content (a download that trickles); 0: sent at once."""
        self.create_delay = 0.0
        """Seconds a batch create waits, the batch made, before answering (widens the create-then-record window)."""
        self.requests = 0
        """HTTP requests received so far (every route)."""
        """Applied to every output line before it is stored (to script odd shapes of line)."""
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.order: list[str] = []
        self.submitted: list[tuple[str, str]] = []
        """(batch id, custom_id) of every line of every batch created, in order."""
        self.failed_lines: list[str] = []
        """custom_ids that came back failed (error file), expired ones included."""
        self.creates = 0
        self.downloads: dict[str, int] = {}
        """How many times each file's content was downloaded."""
        self._lock = threading.RLock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, payload: Any, status: int = 200, raw: bytes | None = None) -> None:
                data = raw if raw is not None else json.dumps(payload).encode()
                drip = server.drip if raw is not None else 0.0
                self.send_response(status)
                self.send_header("content-type", "application/octet-stream" if raw is not None
                                 else "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                write_slowly(self.wfile, data, drip)

            def _dropped(self) -> bool:
                with server._lock:
                    server.requests += 1
                if server.down:  # the connection closes without an answer: the client sees a connection error
                    self.close_connection = True
                return server.down

            def do_GET(self) -> None:
                if self._dropped():
                    return
                path, query = urlsplit(self.path).path, parse_qs(urlsplit(self.path).query)
                with server._lock:
                    if m := re.fullmatch(r"/v1/files/([^/]+)/content", path):
                        server.downloads[m.group(1)] = server.downloads.get(m.group(1), 0) + 1
                        return self._reply(None, raw=server.files[m.group(1)])
                    if m := re.fullmatch(r"/v1/batches/([^/]+)", path):
                        return self._reply(server._advance(m.group(1)))
                    if path == "/v1/batches":
                        return self._reply(server._list(query))
                self._reply({"error": {"message": f"no route {path}"}}, 404)

            def do_POST(self) -> None:
                if self._dropped():
                    return
                path = urlsplit(self.path).path
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with server._lock:
                    if path == "/v1/files":
                        return self._reply(server._upload(self.headers.get("content-type", ""), body))
                    if path == "/v1/batches":
                        created = server._create(json.loads(body))
                if path == "/v1/batches":
                    time.sleep(server.create_delay)  # outside the lock: the batch is visible, its answer late
                    return self._reply(created)
                with server._lock:
                    if m := re.fullmatch(r"/v1/batches/([^/]+)/cancel", path):
                        batch = server.batches[m.group(1)]
                        if batch["status"] in ("validating", "in_progress"):
                            batch["status"] = "cancelled"
                            batch["cancelled_at"] = int(time.time())
                        return self._reply(batch)
                self._reply({"error": {"message": f"no route {path}"}}, 404)

        self._serve(Handler)

    def _upload(self, content_type: str, body: bytes) -> dict[str, Any]:
        message = BytesParser(policy=default_policy).parsebytes(
            f"content-type: {content_type}\r\n\r\n".encode() + body)
        content = b""
        for part in message.iter_parts():
            if part.get_param("name", header="content-disposition") == "file":
                content = part.get_payload(decode=True) or b""
        file_id = f"file-{len(self.files)}"
        self.files[file_id] = content
        return {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                "filename": "input.jsonl", "purpose": "batch", "status": "processed"}

    def _create(self, request: dict[str, Any]) -> dict[str, Any]:
        batch_id = f"batch_{len(self.batches)}"
        lines = [json.loads(line) for line in self.files[request["input_file_id"]].splitlines() if line.strip()]
        self.submitted.extend((batch_id, line["custom_id"]) for line in lines)
        self.creates += 1
        self.down = self.down or self.down_after_create
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": request["endpoint"], "errors": None,
            "input_file_id": request["input_file_id"], "completion_window": request["completion_window"],
            "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
            "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            "metadata": request.get("metadata") or {}, "_lines": lines, "_index": len(self.order),
        }
        self.order.append(batch_id)
        return self._public(self.batches[batch_id])

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {key: value for key, value in batch.items() if not key.startswith("_")}

    def _list(self, query: dict[str, list[str]]) -> dict[str, Any]:
        newest_first = list(reversed(self.order))
        if "after" in query:
            newest_first = newest_first[newest_first.index(query["after"][0]) + 1:]
        limit = int(query.get("limit", ["20"])[0])
        page = [self._public(self.batches[b]) for b in newest_first[:limit]]
        return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None, "has_more": len(newest_first) > limit}

    def _advance(self, batch_id: str) -> dict[str, Any]:
        batch = self.batches[batch_id]
        if batch["status"] == "validating":
            batch["status"] = "in_progress"
        elif batch["status"] == "in_progress" and (self.stall is None or batch["_index"] < self.stall):
            self._finish(batch, expired=batch["_index"] in self.expire)
        return self._public(batch)

    def _finish(self, batch: dict[str, Any], expired: bool) -> None:
        output, errors = [], []
        lines = batch["_lines"]
        for n, line in enumerate(lines):
            custom_id, body = line["custom_id"], line["body"]
            if expired and n >= len(lines) // 2:
                errors.append({"id": f"req_{n}", "custom_id": custom_id, "response": None,
                               "error": {"code": "batch_expired", "message": "This request could not be executed "
                                         "before the completion window expired."}})
            elif self.fails(custom_id, body, sum(1 for _, seen in self.submitted if seen == custom_id)):
                errors.append({"id": f"req_{n}", "custom_id": custom_id,
                               "response": {"status_code": 500, "request_id": f"req_{n}",
                                            "body": {"error": {"message": "scripted failure", "type": "server_error"}}},
                               "error": None})
            else:
                completion = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 0,
                              "model": body["model"],
                              "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": self.answer(body)}}],
                              "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}}
                output.append(self.rewrite({"id": f"req_{n}", "custom_id": custom_id,
                                            "response": {"status_code": 200, "request_id": f"req_{n}",
                                                         "body": completion},
                                            "error": None}))
        self.failed_lines.extend(line["custom_id"] for line in errors)
        batch["status"] = "expired" if expired else "completed"
        batch["request_counts"] = {"total": len(lines), "completed": len(output), "failed": len(errors)}
        for kind, rows in (("output_file_id", output), ("error_file_id", errors)):
            if rows:
                file_id = f"file-{len(self.files)}"
                self.files[file_id] = "".join(json.dumps(row) + "\n" for row in rows).encode()
                batch[kind] = file_id
