"""Gates are taken round-robin between tokens: one token's queue never holds up another's gate.

The attack: a grader token queues as many gates as it may (each takes seconds:
several sandboxed pytest runs); another token's gate, queued just after, used
to wait for all of them (first come, first served). Real git repository, real
sandboxed pytest runs, real SQLite (the order is read from the gates table).
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from gradebox.patches import GateConfig
from gradebox.service import ServiceConfig, Store, create_app, create_token
from sandbox.command import CommandLimits

from ..gradebox.patches import conftest as patch_fixtures
from ..gradebox.patches.conftest import F2P, fix_mean, make_repo

env_cache = patch_fixtures.env_cache  # the session's environment cache (a fixture)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def service(db: Path, env_cache: Path):
    store = Store(db)
    tokens = [bearer(create_token(store, r)) for r in ("admin", "grader", "grader")]
    store.close()
    app = create_app(ServiceConfig(db=db))
    app.state.gates.config = GateConfig(
        limits=CommandLimits(timeout_s=120), base_runs=1, env_cache=env_cache, static=None
    )
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://svc", timeout=60) as client,
    ):
        yield client, *tokens


async def test_another_tokens_gate_is_next_not_behind_a_whole_queue(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean), "fail_to_pass": [*F2P]}
    db = tmp_path / "svc.sqlite"
    async with service(db, env_cache) as (client, admin, flooder, victim):
        r = await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        ids = []
        for i in range(3):
            r = await client.post("/v1/gates", json={**body, "id": f"flood-{i}"}, headers=flooder)
            assert r.status_code == 202, r.text
            ids.append(r.json()["id"])
        r = await client.post("/v1/gates", json={**body, "id": "victim"}, headers=victim)
        assert r.status_code == 202, r.text
        victim_id = r.json()["id"]
        with anyio.fail_after(300):
            for gate_id, who in [*((g, flooder) for g in ids), (victim_id, victim)]:
                while (await client.get(f"/v1/gates/{gate_id}", headers=who)).json()[
                    "status"
                ] != "done":
                    await anyio.sleep(0.2)
    with sqlite3.connect(db) as con:
        order = [gid for (gid,) in con.execute("SELECT id FROM gates ORDER BY finished")]
    # The flood's first gate was already running; the victim's went next, not fourth.
    assert order == [ids[0], victim_id, ids[1], ids[2]], order


async def test_a_revoked_tokens_queued_gates_are_not_run(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean), "fail_to_pass": [*F2P]}
    db = tmp_path / "svc.sqlite"
    async with service(db, env_cache) as (client, admin, revoked, other):
        r = await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        for i in range(3):
            r = await client.post("/v1/gates", json={**body, "id": f"queued-{i}"}, headers=revoked)
            assert r.status_code == 202, r.text
        token_id = revoked["Authorization"].split("_")[1]
        r = await client.delete(f"/v1/tokens/{token_id}", headers=admin)
        assert r.status_code == 200, r.text
        r = await client.post("/v1/gates", json={**body, "id": "after"}, headers=other)
        after = r.json()["id"]
        with anyio.fail_after(300):
            while (done := (await client.get(f"/v1/gates/{after}", headers=other)).json())[
                "status"
            ] != "done":
                await anyio.sleep(0.2)
        assert done["row"]["verdict"] == "pass"
    with sqlite3.connect(db) as con:
        rows = {
            json.loads(row)["id"]: json.loads(row)
            for (row,) in con.execute("SELECT row FROM gates WHERE owner = ?", (token_id,))
        }
    # At most the one already running when the token went was run; the rest never were.
    not_run = [r for r in rows.values() if r["reason"] == "not_run"]
    assert len(not_run) >= 2, rows
    assert all(r["verdict"] == "needs_review" and r.get("tests") is None for r in not_run)
