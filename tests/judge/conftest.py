"""A real OpenAI-compatible HTTP server for the judge tests, and small fixtures around it.

:class:`ScriptedServer` is stdlib ``http.server`` on ``127.0.0.1:0`` in a thread,
implementing ``POST /v1/chat/completions``. Each test scripts its replies
(a queue, then a default responder that answers validly for whatever schema
was asked for). It records every request body and header, arrival times, and
the most requests it ever had in flight at once. The judge talks to it with
the real ``openai`` client over real sockets.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import time
import types
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from judge import Judge, JudgeConfig, JudgeItem
from judge.capabilities import Capabilities

CASES = Path(__file__).parent / "cases"


@dataclass
class Scripted:
    """One scripted HTTP reply."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Seen:
    """One request as the server received it."""

    body: dict[str, Any]
    raw: str
    headers: dict[str, str]
    at: float


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


def valid_reply(schema: dict[str, Any] | None, *, verdict: str = "match", score: int = 4) -> dict:
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


def schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The reply schema a request carried (``None`` in JSON mode)."""
    fmt = body.get("response_format") or {}
    return fmt.get("json_schema", {}).get("schema")


class ScriptedServer:
    """An OpenAI-compatible chat completions endpoint with scripted replies."""

    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.script: deque[Scripted] = deque()
        self.responder: Callable[[dict[str, Any]], Scripted] = self._valid
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
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

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
        return valid_reply(schema or _default_schema(), **kwargs)

    @staticmethod
    def schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
        return schema_of(body)

    def bodies(self) -> list[dict[str, Any]]:
        return [seen.body for seen in self.requests]

    def _valid(self, body: dict[str, Any]) -> Scripted:
        return self.ok_json(valid_reply(schema_of(body) or _default_schema()))

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


def _default_schema() -> dict[str, Any]:
    import rubrics
    from judge import reply_schema

    return reply_schema(rubrics.load("default"))


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    srv = ScriptedServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def server_cls() -> type[ScriptedServer]:
    return ScriptedServer


@pytest.fixture
def make_config(server: ScriptedServer) -> Callable[..., JudgeConfig]:
    def make(**overrides: Any) -> JudgeConfig:
        settings: dict[str, Any] = {
            "base_url": server.base_url,
            "model": "judge-model",
            "api_key": "sk-test-key",
            "seed": 7,
            "timeout_s": 5.0,
            "max_attempts": 3,
            "backoff_initial_s": 0.001,
            "backoff_max_s": 0.01,
            # Pinned, so that request counts are the judgements' own; the probe's tests
            # (tests/judge/test_probe.py) pass capabilities=None.
            "capabilities": Capabilities(),
            **overrides,
        }
        return JudgeConfig(**settings)

    return make


@pytest.fixture
def make_judge(make_config: Callable[..., JudgeConfig]) -> Iterator[Callable[..., Judge]]:
    judges: list[Judge] = []

    def make(**overrides: Any) -> Judge:
        judge = Judge(make_config(**overrides))
        judges.append(judge)
        return judge

    yield make
    for judge in judges:
        judge.close()


def make_item(
    code: str = "def is_even(n):\n    return n % 2 == 0\n", **overrides: Any
) -> JudgeItem:
    fields: dict[str, Any] = {
        "sample_id": "s1",
        "fn": "is_even",
        "spec": "Return True if n is even. Reject non-int input with TypeError.",
        "signature": "def is_even(n: int) -> bool",
        "code": code,
        **overrides,
    }
    return JudgeItem(**fields)


@pytest.fixture
def item() -> Callable[..., JudgeItem]:
    return make_item


# -- quirks: responders that behave like real servers ------------------------------------------
QUIRKS_DOC = """Responders for :class:`ScriptedServer` that behave like real servers.

Each imitates one documented quirk of an "OpenAI-compatible" server, at the HTTP
level (status, body shape, error text as the server writes it):

- :func:`strict_server`: OpenAI / vLLM / SGLang, strict ``json_schema`` honoured.
- :func:`llama_cpp_failing_open`: llama.cpp's ``llama-server`` given a schema it cannot
  turn into a grammar: 200 with free text; with ``json_object`` its generic JSON grammar
  holds, so JSON comes back.
- :func:`prose_server`: a server that answers prose whatever it is asked.
- :func:`lm_studio`: LM Studio refuses ``response_format: json_object`` with a 400 whose
  ``error`` is a bare string: ``'response_format.type' must be 'json_schema' or 'text'``.
- :func:`reasoning_model`: OpenAI's reasoning models refuse ``temperature`` other than
  the default (``param: temperature``, ``code: unsupported_value``) and ``max_tokens``
  (``Use 'max_completion_tokens' instead``).
- :class:`Flipper`: a server whose verdict flips on a random 20 % of items (vLLM at
  temperature 0 without batch invariance changes output with the batch).
"""

Responder = Callable[[dict[str, Any]], Scripted]

PROSE = "Sure! Looking at this function, it seems correct and readable. I'd give it a 4/5."


def _rung(body: dict[str, Any]) -> str:
    fmt = body.get("response_format")
    if fmt is None:
        return "prompt_only"
    if fmt["type"] == "json_schema":
        return "json_schema" if fmt["json_schema"].get("strict") else "json_schema_nonstrict"
    return str(fmt["type"])


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    found = schema_of(body)
    if found is not None:
        return found
    import rubrics
    from judge import reply_schema

    return reply_schema(rubrics.load("default"))


def _ok(content: str, **kwargs: Any) -> Scripted:
    return Scripted(200, completion(content, **kwargs))


def strict_server(body: dict[str, Any]) -> Scripted:
    """Validates on every rung (the schema is honoured)."""
    return _ok(json.dumps(valid_reply(_schema(body))))


def llama_cpp_failing_open(body: dict[str, Any]) -> Scripted:
    """Free text for ``json_schema`` (grammar failed) and no format; JSON for ``json_object``."""
    if _rung(body) == "json_object":
        return _ok(json.dumps(valid_reply(_schema(body))), fingerprint="b4000-llama")
    return _ok(PROSE, fingerprint="b4000-llama")


def prose_server(body: dict[str, Any]) -> Scripted:
    """Prose on every rung."""
    return _ok(PROSE)


def lm_studio(body: dict[str, Any]) -> Scripted:
    """400 for ``json_object`` (a bare-string error, as LM Studio sends it); else valid."""
    if _rung(body) == "json_object":
        return Scripted(400, {"error": "'response_format.type' must be 'json_schema' or 'text'"})
    return _ok(json.dumps(valid_reply(_schema(body))), fingerprint=None)


def reasoning_model(body: dict[str, Any]) -> Scripted:
    """OpenAI reasoning-model refusals of ``temperature`` and ``max_tokens``; else valid."""
    if "temperature" in body and body["temperature"] != 1:
        return Scripted(
            400,
            {
                "error": {
                    "message": "Unsupported value: 'temperature' does not support 0 with this "
                    "model. Only the default (1) value is supported.",
                    "type": "invalid_request_error",
                    "param": "temperature",
                    "code": "unsupported_value",
                }
            },
        )
    if "max_tokens" in body:
        return Scripted(
            400,
            {
                "error": {
                    "message": "Unsupported parameter: 'max_tokens' is not supported with this "
                    "model. Use 'max_completion_tokens' instead.",
                    "type": "invalid_request_error",
                    "param": "max_tokens",
                    "code": "unsupported_parameter",
                }
            },
        )
    return _ok(json.dumps(valid_reply(_schema(body))), fingerprint="fp_reasoning")


class Flipper:
    """Valid replies; a random ``share`` of items (decided on first sight, seeded) answer
    ``mismatch`` on their second request and ``match`` otherwise, so each such item flips
    exactly once across three repeats. ``flipping`` holds the codes of those items."""

    def __init__(self, share: float = 0.2, seed: int = 15) -> None:
        self.share = share
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.flipping: set[str] = set()
        self._seen: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> Scripted:
        user = body["messages"][1]["content"]
        item = hashlib.sha256(user.encode()).hexdigest()
        with self._lock:
            if item not in self._seen:
                self._seen[item] = 0
                if self._rng.random() < self.share:
                    self.flipping.add(item)
            self._seen[item] += 1
            nth = self._seen[item]
            verdict = "mismatch" if item in self.flipping and nth == 2 else "match"
        return _ok(json.dumps(valid_reply(_schema(body), verdict=verdict)))


def serve(server: ScriptedServer, responder: Responder) -> ScriptedServer:
    """Point ``server`` at ``responder``."""
    server.responder = responder
    return server


@pytest.fixture(scope="session")
def quirks() -> types.SimpleNamespace:
    """The quirk responders (see ``QUIRKS_DOC``)."""
    return types.SimpleNamespace(
        strict=strict_server,
        llama_cpp=llama_cpp_failing_open,
        prose=prose_server,
        lm_studio=lm_studio,
        reasoning=reasoning_model,
        Flipper=Flipper,
        PROSE=PROSE,
        rung=_rung,
    )
