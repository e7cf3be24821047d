"""Fixtures around the real OpenAI-compatible HTTP server (``tests/support/openai_server.py``).

:class:`~openai_server.ScriptedServer` is stdlib ``http.server`` on ``127.0.0.1:0``
in a thread, implementing ``POST /v1/chat/completions``. Each test scripts its
replies (a queue, then a default responder that answers validly for whatever
schema was asked for). It records every request body and header, arrival times,
and the most requests it ever had in flight at once. The judge talks to it with
the real ``openai`` client over real sockets.
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from openai_server import (
    Responder,
    Scripted,
    ScriptedServer,
    completion,
    default_schema,
    schema_of,
    valid_reply,
)

from judge import Judge, JudgeConfig, JudgeItem
from judge.capabilities import Capabilities

CASES = Path(__file__).parent / "cases"


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
- :func:`llama_cpp_python`: llama-cpp-python's server (``python -m llama_cpp.server``)
  answers ``json_schema`` with an HTTP 500 carrying a pydantic validation error, and
  constrains output by grammar for ``{"type": "json_object", "schema": ...}``.
- :func:`prose_server`: a server that answers prose whatever it is asked.
- :func:`lm_studio`: LM Studio refuses ``response_format: json_object`` with a 400 whose
  ``error`` is a bare string: ``'response_format.type' must be 'json_schema' or 'text'``.
- :func:`reasoning_model`: OpenAI's reasoning models refuse ``temperature`` other than
  the default (``param: temperature``, ``code: unsupported_value``) and ``max_tokens``
  (``Use 'max_completion_tokens' instead``).
- :class:`Flipper`: a server whose verdict flips on a random 20 % of items (vLLM at
  temperature 0 without batch invariance changes output with the batch).
- :class:`JudgementFlipper`: a server that flips a random 20 % of *judgements*, each
  request on its own (a sampling judge at its default temperature).
"""

PROSE = "Sure! Looking at this function, it seems correct and readable. I'd give it a 4/5."


def _rung(body: dict[str, Any]) -> str:
    fmt = body.get("response_format")
    if fmt is None:
        return "prompt_only"
    if fmt["type"] == "json_schema":
        return "json_schema" if fmt["json_schema"].get("strict") else "json_schema_nonstrict"
    if fmt["type"] == "json_object" and "schema" in fmt:
        return "json_object_schema"
    return str(fmt["type"])


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    found = schema_of(body) or (body.get("response_format") or {}).get("schema")
    return default_schema() if found is None else found


def _ok(content: str, **kwargs: Any) -> Scripted:
    return Scripted(200, completion(content, **kwargs))


def strict_server(body: dict[str, Any]) -> Scripted:
    """Validates on every rung (the schema is honoured)."""
    return _ok(json.dumps(valid_reply(_schema(body))))


def llama_cpp_failing_open(body: dict[str, Any]) -> Scripted:
    """Free text for a schema (grammar failed) and no format; JSON for plain ``json_object``."""
    if _rung(body) == "json_object":
        return _ok(json.dumps(valid_reply(_schema(body))), fingerprint="b4000-llama")
    return _ok(PROSE, fingerprint="b4000-llama")


LLAMA_CPP_PYTHON_500 = (
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"/srv/venv/lib/python3.11/"
    "site-packages/llama_cpp/server/app.py\", line 376, in create_chat_completion\n"
    "    POST /v1/chat/completions"
)
"""The body's message, as llama-cpp-python 0.3.36 sends it for ``response_format: json_schema``."""


def llama_cpp_python(body: dict[str, Any]) -> Scripted:
    """llama-cpp-python 0.3.36: HTTP 500 for ``json_schema`` (its request model allows only
    ``text`` and ``json_object``); ``json_object`` + ``schema`` is grammar-constrained (valid);
    plain ``json_object`` is some JSON object; no format is prose."""
    rung = _rung(body)
    if rung.startswith("json_schema"):
        error = {"message": LLAMA_CPP_PYTHON_500, "type": "internal_server_error"}
        return Scripted(500, {"error": {**error, "param": None, "code": None}})
    if rung == "json_object_schema":
        return _ok(json.dumps(valid_reply(_schema(body))), fingerprint=None)
    if rung == "json_object":
        return _ok(json.dumps({"name": "add", "description": "adds"}), fingerprint=None)
    return _ok(PROSE, fingerprint=None)


def prose_server(body: dict[str, Any]) -> Scripted:
    """Prose on every rung."""
    return _ok(PROSE)


def lm_studio(body: dict[str, Any]) -> Scripted:
    """400 for ``json_object`` (a bare-string error, as LM Studio sends it); else valid."""
    if _rung(body).startswith("json_object"):
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


class JudgementFlipper:
    """Valid replies; each *judgement* (request) independently answers ``mismatch`` with
    probability ``share`` and ``match`` otherwise, decided from a hash of (seed, item,
    nth request for the item), so the outcome does not depend on thread scheduling.
    ``flips[item]`` counts each item's flipped judgements, ``asked[item]`` its requests."""

    def __init__(self, share: float = 0.2, seed: int = 27) -> None:
        self.share = share
        self.seed = seed
        self._lock = threading.Lock()
        self.flips: dict[str, int] = {}
        self.asked: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> Scripted:
        user = body["messages"][1]["content"]
        item = hashlib.sha256(user.encode()).hexdigest()
        with self._lock:
            nth = self.asked.get(item, 0)
            self.asked[item] = nth + 1
            draw = hashlib.sha256(f"{self.seed}:{item}:{nth}".encode()).digest()
            flip = int.from_bytes(draw[:8], "big") / 2**64 < self.share
            self.flips[item] = self.flips.get(item, 0) + flip
        verdict = "mismatch" if flip else "match"
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
        llama_cpp_python=llama_cpp_python,
        prose=prose_server,
        lm_studio=lm_studio,
        reasoning=reasoning_model,
        Flipper=Flipper,
        JudgementFlipper=JudgementFlipper,
        PROSE=PROSE,
        rung=_rung,
    )
