"""A fake GitHub REST API on loopback: real sockets, in-memory state, GitHub's limits enforced.

Only the endpoints gradebox uses. It checks what GitHub checks and a client can
get wrong: the bearer token (401), each token's permissions (403 "Resource not
accessible by integration"), that only a comment's author edits it, at most 50
annotations per request and 65,535 characters of summary (422), comment bodies
of at most 65,536 characters. Pages hold ``page_size`` items at most, with
absolute ``Link`` headers like GitHub's. Scripted faults answer a request
(optionally after doing it, like a 502 behind which the write went through).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Identity:
    login: str
    perms: set[str] = field(default_factory=lambda: {"pull-requests", "checks"})
    can_ask_user: bool = False  # GET /user: an Actions token gets 403


@dataclass
class Fault:
    method: str
    path: str  # a regex matched against the path
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    times: int = 1
    after: bool = False  # do the request first, then answer the fault


@dataclass
class Seen:
    method: str
    path: str
    query: str
    authorization: str | None
    body: Any
    at: float


class FakeGitHub:
    def __init__(self, tokens: dict[str, Identity], *, page_size: int = 100) -> None:
        self.tokens = tokens
        self.page_size = page_size
        self.link_base: str | None = None  # where Link: next points (default: here)
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.check_runs: list[dict[str, Any]] = []
        self.faults: list[Fault] = []
        self.seen: list[Seen] = []
        self._next_id = 1000
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeGitHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def new_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def seed_comment(self, pr: int, login: str, body: str) -> int:
        cid = self.new_id()
        self.comments.setdefault(pr, []).append({"id": cid, "user": {"login": login}, "body": body})
        return cid

    def writes(self, method: str | None = None, path: str = "") -> list[Seen]:
        return [
            s
            for s in self.seen
            if s.method != "GET" and (method in (None, s.method)) and re.search(path, s.path)
        ]

    # -- request handling (called from the server's threads) --

    def handle(
        self, method: str, raw_path: str, auth: str | None, body: Any
    ) -> tuple[int, dict[str, str], Any]:
        import time

        parts = urlsplit(raw_path)
        with self._lock:
            self.seen.append(Seen(method, parts.path, parts.query, auth, body, time.monotonic()))
            who = self._who(auth)
            if who is None:
                return 401, {}, {"message": "Bad credentials"}
            fault = self._fault(method, parts.path)
            if fault is not None and not fault.after:
                return fault.status, fault.headers, fault.body or {"message": "scripted"}
            result = self._route(method, parts.path, parse_qs(parts.query), who, body)
            if fault is not None:
                return fault.status, fault.headers, fault.body or {"message": "scripted"}
            return result

    def _who(self, auth: str | None) -> Identity | None:
        if not auth or not auth.startswith("Bearer "):
            return None
        return self.tokens.get(auth[len("Bearer ") :])

    def _fault(self, method: str, path: str) -> Fault | None:
        for f in self.faults:
            if f.times > 0 and f.method == method and re.search(f.path, path):
                f.times -= 1
                return f
        return None

    def _route(  # noqa: C901 - one dispatch over the fake endpoints
        self, method: str, path: str, query: dict[str, list[str]], who: Identity, body: Any
    ) -> tuple[int, dict[str, str], Any]:
        if method == "GET" and path == "/user":
            if not who.can_ask_user:
                return 403, {}, {"message": "Resource not accessible by integration"}
            return 200, {}, {"login": who.login, "type": "User"}
        if m := re.fullmatch(r"/repos/([^/]+)/([^/]+)/issues/(\d+)/comments", path):
            if "pull-requests" not in who.perms:
                return 403, {}, {"message": "Resource not accessible by integration"}
            pr = int(m.group(3))
            if method == "GET":
                return self._page(path, query, self.comments.get(pr, []))
            if method == "POST":
                text = body.get("body", "")
                if len(text) > 65536:
                    return 422, {}, {"message": "body is too long (maximum is 65536 characters)"}
                made = {"id": self.new_id(), "user": {"login": who.login}, "body": text}
                self.comments.setdefault(pr, []).append(made)
                return 201, {}, made
        if (
            m := re.fullmatch(r"/repos/[^/]+/[^/]+/issues/comments/(\d+)", path)
        ) and method == "PATCH":
            if "pull-requests" not in who.perms:
                return 403, {}, {"message": "Resource not accessible by integration"}
            for c in (c for cs in self.comments.values() for c in cs):
                if c["id"] == int(m.group(1)):
                    if c["user"]["login"] != who.login:
                        return 403, {}, {"message": "not the author"}
                    c["body"] = body.get("body", "")
                    return 200, {}, c
            return 404, {}, {"message": "Not Found"}
        if re.fullmatch(r"/repos/[^/]+/[^/]+/check-runs(/\d+)?", path) or "/check-runs" in path:
            if "checks" not in who.perms:
                return 403, {}, {"message": "Resource not accessible by integration"}
            return self._checks(method, path, query, body)
        return 404, {}, {"message": "Not Found"}

    def _page(
        self, path: str, query: dict[str, list[str]], items: list[dict[str, Any]]
    ) -> tuple[int, dict[str, str], Any]:
        per = min(int(query.get("per_page", ["30"])[0]), self.page_size)
        page = int(query.get("page", ["1"])[0])
        chunk = items[(page - 1) * per : page * per]
        headers = {}
        if page * per < len(items):
            base = self.link_base or self.url
            headers["Link"] = f'<{base}{path}?per_page={per}&page={page + 1}>; rel="next"'
        return 200, headers, chunk

    def _checks(
        self, method: str, path: str, query: dict[str, list[str]], body: Any
    ) -> tuple[int, dict[str, str], Any]:
        if method == "GET" and (
            m := re.fullmatch(r"/repos/[^/]+/[^/]+/commits/([0-9a-f]+)/check-runs", path)
        ):
            name = query.get("check_name", [None])[0]
            runs = [
                r
                for r in self.check_runs
                if r["head_sha"] == m.group(1) and name in (None, r["name"])
            ]
            return 200, {}, {"total_count": len(runs), "check_runs": runs}
        problem = _check_output(body.get("output"))
        if problem:
            return 422, {}, {"message": problem}
        if method == "POST" and path.endswith("/check-runs"):
            if not re.fullmatch(r"[0-9a-f]{40}", str(body.get("head_sha"))) or not body.get("name"):
                return 422, {}, {"message": "name and head_sha are required"}
            if body.get("conclusion") not in (
                "success",
                "failure",
                "neutral",
                "cancelled",
                "skipped",
                "timed_out",
                "action_required",
            ):
                return 422, {}, {"message": "bad conclusion"}
            run = {
                "id": self.new_id(),
                **body,
                "annotations": list(body["output"].get("annotations", [])),
            }
            self.check_runs.append(run)
            return 201, {}, {k: v for k, v in run.items() if k != "annotations"}
        if method == "PATCH" and (m := re.fullmatch(r"/repos/[^/]+/[^/]+/check-runs/(\d+)", path)):
            for run in self.check_runs:
                if run["id"] == int(m.group(1)):
                    run["annotations"] += body["output"].get("annotations", [])
                    run["output"] = {**run["output"], **body["output"]}
                    return 200, {}, {"id": run["id"]}
            return 404, {}, {"message": "Not Found"}
        return 404, {}, {"message": "Not Found"}


def _check_output(output: Any) -> str | None:
    if output is None:
        return None
    if not isinstance(output, dict) or not output.get("title") or "summary" not in output:
        return "output needs title and summary"
    if len(output["summary"]) > 65535:
        return "output.summary is too long (maximum is 65535 characters)"
    notes = output.get("annotations", [])
    if len(notes) > 50:
        return "output.annotations: at most 50 per request"
    for a in notes:
        if not {"path", "start_line", "end_line", "annotation_level", "message"} <= set(a):
            return "annotation lacks a field"
        if a["annotation_level"] not in ("notice", "warning", "failure"):
            return "bad annotation_level"
    return None


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output quiet
            pass

        def _do(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = json.loads(raw) if raw else {}
            status, headers, reply = fake.handle(
                self.command, self.path, self.headers.get("Authorization"), body
            )
            data = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = _do

    return Handler
