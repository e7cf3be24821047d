"""A real OpenAI-compatible HTTP server for tests, with scripted replies.

:class:`ScriptedServer` is stdlib ``http.server`` on ``127.0.0.1:0`` in a thread,
implementing ``POST /v1/chat/completions``. Each test scripts its replies (a
queue of :class:`Scripted`, then ``responder``, by default a valid reply for
whatever schema was asked for). It records every request (:class:`Seen`: body,
raw text, headers, arrival time) and the most requests it ever had in flight at
once. The code under test talks to it with the real ``openai`` client over real
sockets.

Test modules import it as ``openai_server`` (``pythonpath`` in pyproject's
pytest options names this folder; test modules cannot import each other under
``--import-mode=importlib``).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = [
    "Responder",
    "Scripted",
    "ScriptedServer",
    "Seen",
    "answer",
    "completion",
    "default_schema",
    "schema_of",
    "valid_reply",
]


@dataclass
class Scripted:
    """One scripted HTTP reply (a ``str`` body is sent as it is, anything else as JSON)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    """One request as the server received it (header names in lower case)."""

    body: dict[str, Any]
    raw: str
    headers: dict[str, str]
    at: float


Responder = Callable[[dict[str, Any]], Scripted]


def completion(
    content: str | None,
    *,
    model: str = "judge-model-2024",
    fingerprint: str | None = "fp_scripted",
    finish_reason: str = "stop",
    refusal: str | None = None,
    usage: tuple[int, int] = (321, 54),
) -> dict[str, Any]:
    """A chat.completion body."""
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "system_fingerprint": fingerprint,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": sum(usage),
        },
    }


def valid_reply(
    schema: dict[str, Any] | None, *, verdict: str = "match", score: int = 4
) -> dict[str, Any]:
    """A reply that satisfies ``schema`` (the reply schema the judge sent)."""
    props = (schema or {}).get("properties", {})
    ids = props.get("scores", {}).get("required", [])
    reply: dict[str, Any] = {}
    if "verdict" in props:
        reply["verdict"] = verdict
        reply["unmet_requirements"] = [] if verdict == "match" else ["rejects non-int input"]
    reply["scores"] = dict.fromkeys(ids, score)
    reply["issues"] = [{"line": 1, "severity": "info", "message": "Fine."}]
    reply["rationale"] = "Does what the specification asks."
    return reply


def answer(body: dict[str, Any], verdict: str = "match", top: bool = True) -> dict[str, Any]:
    """A completion that is valid for the schema ``body`` carried, with top (or bottom) scores.

    Fingerprint ``fp_test`` and 300 + 50 tokens: the grading and service tests check them.
    """
    schema = body["response_format"]["json_schema"]["schema"]
    scores = schema["properties"]["scores"]
    values = {k: (max if top else min)(v["enum"]) for k, v in scores["properties"].items()}
    reply = {
        "verdict": verdict,
        "unmet_requirements": [] if verdict == "match" else ["adds two, not one"],
        "scores": values,
        "issues": [{"line": 2, "severity": "info", "message": "Fine."}],
        "rationale": "Compared with the specification.",
    }
    return completion(json.dumps(reply), fingerprint="fp_test", usage=(300, 50))


def schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The reply schema a request carried (``None`` in JSON mode)."""
    fmt = body.get("response_format") or {}
    schema: dict[str, Any] | None = fmt.get("json_schema", {}).get("schema")
    return schema


class ScriptedServer:
    """An OpenAI-compatible chat completions endpoint with scripted replies."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.script: deque[Scripted] = deque()
        self.responder: Responder = self._valid
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> ScriptedServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- scripting -------------------------------------------------------------------------

    def push(self, *replies: Scripted) -> None:
        self.script.extend(replies)

    def ok(self, content: str | None, **kwargs: Any) -> Scripted:
        return Scripted(200, completion(content, **kwargs))

    def ok_json(self, obj: Any, **kwargs: Any) -> Scripted:
        return self.ok(json.dumps(obj), **kwargs)

    def error(
        self, status: int, message: str, *, headers: dict[str, str] | None = None, **extra: Any
    ) -> Scripted:
        body = {"error": {"message": message, "type": "invalid_request_error", **extra}}
        return Scripted(status, body, headers or {})

    def valid(self, schema: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        """A valid reply for ``schema`` (default: the ``default`` rubric's)."""
        return valid_reply(schema or default_schema(), **kwargs)

    @staticmethod
    def schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
        return schema_of(body)

    def bodies(self) -> list[dict[str, Any]]:
        return [seen.body for seen in self.requests]

    def _valid(self, body: dict[str, Any]) -> Scripted:
        return self.ok_json(valid_reply(schema_of(body) or default_schema()))

    # -- serving ---------------------------------------------------------------------------

    def _next(self, body: dict[str, Any]) -> Scripted:
        with self._lock:
            if self.script:
                return self.script.popleft()
        return self.responder(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def handle(self) -> None:
                # The client went away while we read (a stopped app): nothing to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                if self.path != "/v1/chat/completions":
                    self._send(Scripted(404, {"error": {"message": f"no route {self.path}"}}))
                    return
                body = json.loads(raw)
                with server._lock:
                    headers = {k.lower(): v for k, v in self.headers.items()}
                    server.requests.append(Seen(body, raw, headers, time.monotonic()))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server._next(body)
                    time.sleep(reply.delay)
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test): nothing to answer
                finally:
                    with server._lock:
                        server.in_flight -= 1

            def _send(self, reply: Scripted) -> None:
                data = (
                    reply.body.encode()
                    if isinstance(reply.body, str)
                    else json.dumps(reply.body).encode()
                )
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler


def default_schema() -> dict[str, Any]:
    """The reply schema of the ``default`` rubric."""
    import rubrics
    from judge import reply_schema

    return reply_schema(rubrics.load("default"))
