"""Fixtures for the service tests: one real sandbox per module, a fresh app per test.

Apps are driven in-process through ``httpx.ASGITransport``; the lifespan (store,
run worker) is entered explicitly because the transport does not send
lifespan events. Tokens are created in the test's SQLite file beforehand,
exactly as ``gradebox token create`` does.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from openai_server import Scripted, ScriptedServer, answer

from gradebox.service import ServiceConfig, Store, create_app, create_token
from gradebox.service.engine.static import StaticService
from sandbox import Sandbox, open_sandbox

ROOT = Path(__file__).resolve().parents[3]
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
    # ~2.5 s quiet; past 120 s (the default) at load 22 on 2 cores: the bound is for a hang.
    service = StaticService(sessions=1, start_timeout_s=300)
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

    async def wait_run(self, run_id: str, headers: dict[str, str], timeout: float = 90) -> Any:
        """Poll until the run ends; ``timeout`` only bounds a hang (a busy machine is slow)."""
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


class Endpoint(ScriptedServer):
    """An OpenAI-compatible endpoint: valid replies with ``verdict``, after ``delay`` s."""

    def __init__(self) -> None:
        super().__init__()
        self.verdict = "match"
        self.delay = 0.0
        self.responder = lambda body: Scripted(200, answer(body, self.verdict), delay=self.delay)
        self.start()

    @property
    def raw(self) -> list[str]:
        """Every request's body as it came."""
        return [seen.raw for seen in self.requests]

    @property
    def keys(self) -> list[str]:
        """Every request's ``Authorization`` header (``""`` when it had none)."""
        return [seen.headers.get("authorization", "") for seen in self.requests]


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    srv = Endpoint()
    yield srv
    srv.stop()
