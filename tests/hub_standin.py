"""A local stand-in for the Hugging Face Hub's HTTP API, as much of it as a dataset push uses (create a repo, ask how
to upload each file, commit files inline): tests point `HF_ENDPOINT` at it on 127.0.0.1 and read what arrived.

It answers every file as a "regular" upload, so huggingface_hub sends the contents inline (base64 in the commit's
NDJSON body) and never starts an LFS or Xet transfer, which would need other servers."""
from __future__ import annotations

import base64
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class HubState:
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)
    """repo id -> {"type", "private", "files": {path: bytes}, "commits": [message]}."""
    requests: list[tuple[str, str]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)


def _handler(state: HubState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet
            pass

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            state.requests.append(("GET", self.path))
            self._send(404, {"error": "not in the stand-in"})

        def do_POST(self) -> None:
            state.requests.append(("POST", self.path))
            state.authorizations.append(self.headers.get("Authorization", ""))
            body = self._body()
            parts = self.path.split("?")[0].strip("/").split("/")
            if parts[:3] == ["api", "repos", "create"]:
                request = json.loads(body)
                name = f"{request.get('organization') or 'user'}/{request['name']}" if "/" not in request["name"] \
                    else request["name"]
                private = request.get("private", request.get("visibility") == "private")  # older / newer clients
                state.repos.setdefault(name, {"type": request.get("type"), "private": private,
                                              "files": {}, "commits": []})
                return self._send(200, {"url": f"http://{self.headers['Host']}/datasets/{name}", "name": name})
            if parts == ["api", "validate-yaml"]:  # the card's front matter, checked before a README.md commit
                import yaml

                content = json.loads(body).get("content", "")
                try:
                    yaml.safe_load(content.split("---")[1] if content.startswith("---") else "")
                except yaml.YAMLError as exc:
                    return self._send(400, {"error": f"invalid YAML: {exc}"})
                return self._send(200, {"errors": [], "warnings": []})
            if len(parts) >= 6 and parts[0] == "api" and parts[4] in ("preupload", "commit"):
                repo = f"{parts[2]}/{parts[3]}"
                if repo not in state.repos:
                    return self._send(404, {"error": f"Repository {repo} not found"})
                if parts[4] == "preupload":
                    files = json.loads(body)["files"]
                    return self._send(200, {"files": [{"path": f["path"], "uploadMode": "regular",
                                                       "shouldIgnore": False} for f in files]})
                for line in body.decode().splitlines():
                    item = json.loads(line)
                    if item["key"] == "header":
                        state.repos[repo]["commits"].append(item["value"].get("summary"))
                    elif item["key"] == "file":
                        state.repos[repo]["files"][item["value"]["path"]] = base64.b64decode(item["value"]["content"])
                return self._send(200, {"commitUrl": f"http://{self.headers['Host']}/datasets/{repo}/commit/{'1' * 40}", "commitOid": "1" * 40,
                                        "success": True})
            self._send(404, {"error": "not in the stand-in"})

    return Handler


class HubStandIn:
    """`with HubStandIn() as hub:` serves on 127.0.0.1; `hub.url`, `hub.state`."""

    def __enter__(self) -> "HubStandIn":
        self.state = HubState()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self.state))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()
