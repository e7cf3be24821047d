"""Fixtures for the service tests: one real sandbox per module, a fresh app per test.

Apps are driven in-process through ``httpx.ASGITransport``; the lifespan (store,
run worker) is entered explicitly because the transport does not send
lifespan events. Tokens are created in the test's SQLite file beforehand,
exactly as ``gradebox token create`` does.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from gradebox.service import ServiceConfig, Store, create_app, create_token
from gradebox.service.static import StaticService
from sandbox import Sandbox, open_sandbox

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    sb = open_sandbox("auto", workers=2)
    try:
        yield sb
    finally:
        sb.close()


@pytest.fixture(scope="module")
def static_service() -> Iterator[StaticService]:
    """One warm static session for a module (each takes ~2.5 s to start)."""
    service = StaticService(sessions=1)
    try:
        yield service
    finally:
        service.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class Service:
    """A running app, its client, and one token of each kind (two graders)."""

    client: httpx.AsyncClient
    admin: dict[str, str]
    grader: dict[str, str]
    other: dict[str, str]
    db: Path

    async def wait_run(self, run_id: str, headers: dict[str, str], timeout: float = 30) -> Any:
        with anyio.fail_after(timeout):
            while True:
                r = await self.client.get(f"/v1/runs/{run_id}", headers=headers)
                assert r.status_code == 200, r.text
                if r.json()["status"] in ("done", "cancelled"):
                    return r.json()
                await anyio.sleep(0.05)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def example_tasks() -> dict[str, dict[str, Any]]:
    """examples/ as task bodies by fn."""
    tasks: dict[str, dict[str, Any]] = {}
    for line in (EXAMPLES / "hidden.jsonl").read_text().splitlines():
        case = json.loads(line)
        tasks.setdefault(case["fn"], {"public": {}, "hidden": []})["hidden"].append(case)
    for line in (EXAMPLES / "public.jsonl").read_text().splitlines():
        pub = json.loads(line)
        tasks[pub["fn"]]["public"] = pub
    return tasks


def example_samples() -> list[dict[str, Any]]:
    return [json.loads(x) for x in (EXAMPLES / "samples.jsonl").read_text().splitlines() if x]


@asynccontextmanager
async def running(
    db: Path,
    sandbox: Sandbox | None,
    *,
    register: bool = True,
    static: StaticService | None = None,
    judge: Any = None,
    **overrides: Any,
) -> AsyncIterator[Service]:
    store = Store(db)
    tokens = [create_token(store, r) for r in ("admin", "grader", "grader")]
    store.close()
    config = replace(ServiceConfig(db=db), **overrides)
    app = create_app(config, sandbox=sandbox, static=static, judge=judge)
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://svc", timeout=60) as client,
    ):
        svc = Service(client, *(bearer(t) for t in tokens), db)
        if register:
            for fn, body in example_tasks().items():
                r = await client.put(f"/v1/tasks/{fn}", json=body, headers=svc.admin)
                assert r.status_code == 200, r.text
        yield svc


@dataclass(frozen=True)
class Kit:
    """Helpers for test modules (``--import-mode=importlib`` cannot import conftest)."""

    sandbox: Sandbox
    tmp: Path

    def running(self, **overrides: Any) -> Any:
        return running(self.tmp / "svc.sqlite", self.sandbox, **overrides)

    def running_with(self, sandbox: Any, **overrides: Any) -> Any:
        return running(self.tmp / "svc.sqlite", sandbox, **overrides)

    def running_without_sandbox(self, **overrides: Any) -> Any:
        return running(self.tmp / "svc.sqlite", None, **overrides)

    bearer = staticmethod(bearer)
    example_tasks = staticmethod(example_tasks)
    example_samples = staticmethod(example_samples)


@pytest.fixture
def kit(sandbox: Sandbox, tmp_path: Path) -> Kit:
    return Kit(sandbox, tmp_path)


# ------------------------------------------------- a local OpenAI-compatible judge endpoint


class Endpoint:
    """An OpenAI-compatible endpoint: valid replies with ``verdict``, after ``delay`` s."""

    def __init__(self) -> None:
        self.verdict = "match"
        self.delay = 0.0
        self.raw: list[str] = []
        self.keys: list[str] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def handle(self) -> None:
                # The judge gave up (the app stopped): nothing to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    super().handle()

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", "0"))).decode()
                endpoint.raw.append(raw)
                endpoint.keys.append(self.headers.get("Authorization", ""))
                time.sleep(endpoint.delay)
                data = json.dumps(_reply(json.loads(raw), endpoint.verdict)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _reply(body: dict[str, Any], verdict: str) -> dict[str, Any]:
    schema = body["response_format"]["json_schema"]["schema"]
    scores = schema["properties"]["scores"]["properties"]
    content = {
        "verdict": verdict,
        "unmet_requirements": [] if verdict == "match" else ["adds two, not one"],
        "scores": {k: max(v["enum"]) for k, v in scores.items()},
        "issues": [{"line": 2, "severity": "info", "message": "Fine."}],
        "rationale": "Compared with the specification.",
    }
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "judge-model-2024",
        "system_fingerprint": "fp_test",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": json.dumps(content)},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 300, "completion_tokens": 50, "total_tokens": 350},
    }


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    srv = Endpoint()
    yield srv
    srv.stop()
