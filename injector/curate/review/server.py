"""The local review server: stdlib `http.server`, bound to 127.0.0.1, every request carrying a random token.

Each decision is one POST that is committed to the run's `review.sqlite` before the answer is sent, so a closed
tab, a killed server or a second tab loses nothing.
"""
from __future__ import annotations

import json
import logging
import secrets
import threading
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from injector.util.errors import UserError
from injector.util.images import ImageRefused, is_data_url, read_image
from injector.util.json_bounds import MAX_REVIEW_BODY_BYTES, JsonRefused, loads_bounded
from injector.curate.review.assets import KATEX_ERROR_STYLE_HASH, static_file
from injector.curate.review.render import page_url, render_page
from injector.curate.review.session import Conflict, NotACandidate, Refused, ReviewSession, View

HOST = "127.0.0.1"
MAX_BODY = MAX_REVIEW_BODY_BYTES
log = logging.getLogger("injector")


class ReviewServer(ThreadingHTTPServer):
    """Serves one `ReviewSession`; `url` carries the access token."""

    daemon_threads = True
    # The listen backlog: socketserver's default of 5 reset about half of 50 simultaneous POSTs (two tabs, a
    # script). 128 connections wait to be accepted instead; the kernel caps it at net.core.somaxconn.
    request_queue_size = 128

    def __init__(self, session: ReviewSession, *, port: int = 0, token: str | None = None):
        self.session = session
        self.token = token or secrets.token_urlsafe(32)
        # One lock around "compute next, then record": two tabs deciding at once still get consistent answers.
        self.decide_lock = threading.Lock()
        try:
            super().__init__((HOST, port), ReviewHandler)
        except OSError as exc:
            raise UserError(f"cannot listen on {HOST}:{port} ({exc.strerror}); choose another --port or omit it")
        self.cookie_name = f"review_token_{self.port}"  # cookies ignore ports: one per server

    @property
    def port(self) -> int:
        return self.server_address[1]

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/?token={self.token}"


class ReviewHandler(BaseHTTPRequestHandler):
    server: ReviewServer
    server_version = "inject-review"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        log.debug("review: " + format, *args)

    # -- access -------------------------------------------------------------------------------------------------
    def _token_given(self, query: dict[str, list[str]]) -> tuple[bool, bool]:
        """(allowed, came in the query): the token from the query, the X-Review-Token header or our cookie."""
        expected = self.server.token
        from_query = (query.get("token") or [""])[0]
        if from_query and secrets.compare_digest(from_query, expected):
            return True, True
        header = self.headers.get("X-Review-Token", "")
        if header and secrets.compare_digest(header, expected):
            return True, False
        try:
            cookie = SimpleCookie(self.headers.get("Cookie", ""))
        except CookieError:
            return False, False
        morsel = cookie.get(self.server.cookie_name)
        return bool(morsel and secrets.compare_digest(morsel.value, expected)), False

    def _refuse(self) -> None:
        self._send(HTTPStatus.FORBIDDEN, b"forbidden: open the URL that `inject review` printed (it carries the "
                   b"access token)\n", "text/plain; charset=utf-8")

    def _send(self, status: HTTPStatus, body: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        all_headers = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
                       "Referrer-Policy": "no-referrer", **(headers or {})}
        for name, value in all_headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: HTTPStatus, data: dict[str, Any]) -> None:
        self._send(status, json.dumps(data, ensure_ascii=False).encode(), "application/json; charset=utf-8")

    # -- routes -------------------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        self._guarded(self._get)

    def do_POST(self) -> None:  # noqa: N802 - the base class's name
        self._guarded(self._post)

    do_HEAD = do_GET

    def _guarded(self, route) -> None:
        # A failure (a locked or unwritable store, a candidates file changed under us) must reach the page as an
        # answer saying "not saved", never as a dropped connection.
        try:
            route()
        except Exception as exc:  # noqa: BLE001 - reported to the client and logged
            log.warning("review: %s %s failed: %s: %s", self.command, self.path.split("?")[0], type(exc).__name__, exc)
            self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"server error: {type(exc).__name__}: {exc}"})

    def _get(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        allowed, in_query = self._token_given(query)
        if not allowed:
            return self._refuse()
        if url.path == "/":
            return self._page(query, set_cookie=in_query)
        if url.path == "/api/decisions":
            latest = self.server.session.latest()
            return self._json(HTTPStatus.OK, {key: vars(d) for key, d in latest.items()})
        if url.path == "/image":
            return self._image(query)
        if url.path.startswith("/static/"):
            return self._static(url.path)
        if url.path == "/favicon.ico":
            return self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
        self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")

    def _image(self, query: dict[str, list[str]]) -> None:
        """A local image a candidate references, and nothing else (no path comes from the request): only a PNG,
        JPEG, GIF or WebP file by its bytes (never SVG), under the run's image directory, through no symlink."""
        session = self.server.session
        entry = session.by_key.get((query.get("key") or [""])[0])
        try:
            images = session.candidate(entry).images if entry else []
        except NotACandidate:
            images = []
        number = (query.get("n") or [""])[0]
        reference = images[int(number)] if number.isdigit() and int(number) < len(images) else None
        if (entry is None or not isinstance(reference, str) or not reference or "://" in reference
                or is_data_url(reference)):
            return self._send(HTTPStatus.NOT_FOUND, b"no such image\n", "text/plain; charset=utf-8")
        base = session.runs[entry.run].image_base
        if base is None:
            return self._send(HTTPStatus.NOT_FOUND, b"not served: the run's manifest records no image directory\n",
                              "text/plain; charset=utf-8")
        try:
            data, kind = read_image(base / reference, base)  # an absolute reference stays as it is
        except ImageRefused as refused:
            return self._send(HTTPStatus.NOT_FOUND, f"not served: {refused}\n".encode(), "text/plain; charset=utf-8")
        # Even a file that passed the checks gets no power over this origin: no script, no sub-resources.
        self._send(HTTPStatus.OK, data, kind, {"Content-Security-Policy": "default-src 'none'; sandbox"})

    def _static(self, path: str) -> None:
        """A vendored KaTeX file (script, stylesheet, font): only the files the package ships, by exact name."""
        found = static_file(path)
        if found is None:
            return self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
        data, kind = found
        self._send(HTTPStatus.OK, data, kind, {"Cache-Control": "private, max-age=86400"})

    def _page(self, query: dict[str, list[str]], *, set_cookie: bool) -> None:
        first = {name: (values or [""])[0] for name, values in query.items()}
        nonce = secrets.token_urlsafe(16)
        html = render_page(self.server.session, key=first.get("key"), view=View.of(first), token=self.server.token,
                           nonce=nonce)
        headers = {
            # Defence in depth behind the escaping: only our own code runs (inline, and KaTeX's files by nonce), fonts
            # come from this server only, and nothing leaves the machine.
            "Content-Security-Policy": (f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}' "
                                        f"'unsafe-hashes' {KATEX_ERROR_STYLE_HASH}; font-src 'self'; "
                                        "connect-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; "
                                        "frame-ancestors 'none'"),
            "X-Frame-Options": "DENY",
        }
        if set_cookie:
            headers["Set-Cookie"] = (f"{self.server.cookie_name}={self.server.token}; Path=/; HttpOnly; "
                                     "SameSite=Strict")
        self._send(HTTPStatus.OK, html.encode("utf-8"), "text/html; charset=utf-8", headers)

    def _post(self) -> None:
        url = urlsplit(self.path)
        allowed, _ = self._token_given(parse_qs(url.query))
        if not allowed:
            return self._refuse()
        if url.path != "/api/decide":
            return self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")
        # JSON only: a cross-site form cannot send it without a preflight this server never grants.
        if not self.headers.get("Content-Type", "").startswith("application/json"):
            return self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "send the decision as application/json"})
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY:
            return self._json(HTTPStatus.BAD_REQUEST, {"error": "empty or oversized request"})
        try:
            payload = loads_bounded(self.rfile.read(length))
        except JsonRefused as exc:
            return self._json(HTTPStatus.BAD_REQUEST, {"error": f"the request is {exc}"})
        except (ValueError, UnicodeDecodeError):
            return self._json(HTTPStatus.BAD_REQUEST, {"error": "the request is not JSON"})
        if not isinstance(payload, dict) or not isinstance(payload.get("key"), str):
            return self._json(HTTPStatus.BAD_REQUEST, {"error": "expected an object with key and decision"})
        self._decide(payload)

    def _decide(self, payload: dict[str, Any]) -> None:
        session = self.server.session
        view = View.of(payload)
        key = payload["key"]
        with self.server.decide_lock:
            # The next candidate is taken from the view as it was before this decision moved the current one.
            window = session.window(view, key, 0, 1)
            following = found.key if window.found and (found := window.at(1)) else key
            try:
                decision = session.decide(key, payload)
            except Conflict as exc:
                return self._json(HTTPStatus.CONFLICT, {"error": str(exc)})
            except Refused as exc:
                return self._json(HTTPStatus.UNPROCESSABLE_ENTITY, {"error": str(exc)})
            except UserError as exc:  # the store cannot be written (a full disk): said as it is, nothing saved
                return self._json(HTTPStatus.SERVICE_UNAVAILABLE, {"error": f"not saved: {exc}"})
        self._json(HTTPStatus.OK, {"ok": True, "decision": vars(decision), "next": page_url(following, view)})


def make_server(run_dirs: list[str | Path], *, port: int = 0, reviewer: str = "",
                token: str | None = None, taxonomy: str | Path | None = None, queue: bool = False) -> ReviewServer:
    """A review server for these run directories, listening on 127.0.0.1 (call `serve_forever` to run it);
    `queue`: the reviewer's queue of a run's review plan only, as `inject review --reviewer NAME` serves it."""
    return ReviewServer(ReviewSession(run_dirs, reviewer, taxonomy, queue=queue), port=port, token=token)
