"""POST /v1/gates: patch gates as async jobs on repositories an admin registered.

In process through ASGITransport (a fast gate configuration), and once end to end
on a real uvicorn with the default configuration. The fixture repository and its
patches are the patch gate's own (real git).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from ports import free_port

from gradebox.patches import GateConfig
from gradebox.service import ServiceConfig, Store, create_app, create_token
from sandbox.command import CommandLimits

from ...patches import conftest as patch_fixtures
from ...patches.conftest import F2P, fix_mean, make_repo

env_cache = patch_fixtures.env_cache  # the session's environment cache (a fixture)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@asynccontextmanager
async def service(tmp: Path, env_cache: Path):
    db = tmp / "svc.sqlite"
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


async def wait_gate(client: httpx.AsyncClient, gate_id: str, headers: dict[str, str]) -> Any:
    with anyio.fail_after(240):
        while True:
            r = await client.get(f"/v1/gates/{gate_id}", headers=headers)
            assert r.status_code == 200, r.text
            if r.json()["status"] == "done":
                return r.json()
            await anyio.sleep(0.2)


class Listener:
    """A loopback HTTP server that records whether anything ever asked it for anything."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                hits.append(self.path)
                self.send_response(404)
                self.end_headers()

            do_POST = do_GET

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/repo.git"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


async def test_a_gate_runs_as_a_job_and_a_grader_sees_its_own_row(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    fix = repo.patch(fix_mean)
    async with service(tmp_path, env_cache) as (client, admin, grader, other):
        r = await client.put(
            "/v1/repos/calc",
            json={"path": str(repo.path), "lockfile": "requirements.txt"},
            headers=admin,
        )
        assert r.status_code == 200, r.text
        assert r.json()["head"] == repo.base
        body = {
            "repo": "calc",
            "base": "main",
            "patch": fix,
            "fail_to_pass": list(F2P),
            "intent": "mean divides by n",
        }
        r = await client.post("/v1/gates", json=body, headers=grader)
        assert r.status_code == 202, r.text
        gate_id = r.json()["id"]
        done = await wait_gate(client, gate_id, grader)
        row = done["row"]
        assert row["verdict"] == "pass", row
        assert row["tests"]["fail_to_pass"] == {F2P[0]: "F2P"}
        assert row["repo"] == "calc"
        assert str(tmp_path) not in json.dumps(done)  # no path of the service host
        assert (await client.get(f"/v1/gates/{gate_id}", headers=other)).status_code == 404
        assert (await client.get("/v1/gates/nope", headers=other)).status_code == 404
        full = (await client.get(f"/v1/gates/{gate_id}", headers=admin)).json()
        assert full["row"]["repo"] == str(repo.path)

        def breaks_add(p: Path) -> None:
            ops = p / "calc" / "ops.py"
            ops.write_text(ops.read_text().replace("return a + b", "return a - b"))

        r = await client.post(
            "/v1/gates",
            headers=grader,
            json={**body, "patch": repo.patch(breaks_add), "id": "breaks"},
        )
        done = await wait_gate(client, r.json()["id"], grader)
        assert done["row"]["verdict"] == "fail" and done["row"]["id"] == "breaks"
        assert done["row"]["tests"]["pass_to_pass"]["tests/test_ops.py::test_add"] == "P2F"
        metrics = (await client.get("/metrics", headers=admin)).text
        assert 'stage="gate"' in metrics


async def test_repositories_are_registered_by_an_admin_only_and_never_fetched(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    listener = Listener()
    try:
        async with service(tmp_path, env_cache) as (client, admin, grader, _other):
            put = "/v1/repos/calc"
            assert (
                await client.put(put, json={"path": str(repo.path)}, headers=grader)
            ).status_code == 403
            for bad in (listener.url, "calc", str(tmp_path), f"file://{repo.path}"):
                r = await client.put(put, json={"path": bad}, headers=admin)
                assert r.status_code == 422, (bad, r.text)
            r = await client.put("/v1/repos/..", json={"path": str(repo.path)}, headers=admin)
            assert r.status_code in (404, 422)
            assert (
                await client.put(put, json={"path": str(repo.path)}, headers=admin)
            ).status_code == 200
            patch = repo.patch(fix_mean)
            attempts = [
                {"repo": listener.url, "base": "main", "patch": patch},  # a URL as the repo
                {"repo": "elsewhere", "base": "main", "patch": patch},  # not registered
            ]
            for body in attempts:
                r = await client.post("/v1/gates", json=body, headers=grader)
                assert r.status_code == 404, r.text
            for extra in (
                {"path": str(repo.path)},
                {"url": listener.url},
                {"test_patch": patch},
                {"lockfile": "/etc/passwd"},
            ):
                body = {"repo": "calc", "base": "main", "patch": patch, **extra}
                r = await client.post("/v1/gates", json=body, headers=grader)
                assert r.status_code == 422, r.text
                assert next(iter(extra)) in r.text
            for base in ("--upload-pack=touch /tmp/x", "-c", "main branch", f"{listener.url}"):
                body = {"repo": "calc", "base": base, "patch": patch}
                r = await client.post("/v1/gates", json=body, headers=grader)
                assert r.status_code == 422, (base, r.text)
            r = await client.post(
                "/v1/gates",
                json={"repo": "calc", "base": "main", "patch": f"see {listener.url}\n" + patch},
                headers=grader,
            )
            assert r.status_code == 202
            await wait_gate(client, r.json()["id"], grader)
    finally:
        listener.stop()
    assert listener.hits == []


async def test_a_token_has_a_bounded_number_of_unfinished_gates(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    async with service(tmp_path, env_cache) as (client, admin, grader, _other):
        await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        # one gate runs at a time: ten are unfinished when the eleventh comes
        body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean)}
        codes = [
            (await client.post("/v1/gates", json=body, headers=grader)).status_code
            for _ in range(11)
        ]
        assert codes[:10] == [202] * 10 and codes[10] == 429


def test_post_gates_end_to_end_on_a_real_uvicorn(tmp_path):
    repo = make_repo(tmp_path / "calc")
    fix = repo.patch(fix_mean)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    out = tmp_path / "serve.out"
    argv = [
        sys.executable,
        "-m",
        "gradebox.service",
        "serve",
        "--db",
        str(tmp_path / "db.sqlite"),
        "--port",
        str(port),
        "--workers",
        "1",
        "--admin-token",
    ]
    with out.open("wb") as stdout, (tmp_path / "serve.err").open("wb") as stderr:
        proc = subprocess.Popen(argv, stdout=stdout, stderr=stderr)
    try:
        deadline = time.monotonic() + 120  # a hang bound: start-up is slow on a busy machine
        while True:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
            time.sleep(0.1)
        (line,) = [x for x in out.read_text().splitlines() if x.startswith("admin token")]
        admin = bearer(line.split(": ", 1)[1])
        r = httpx.post(f"{url}/v1/tokens", json={"role": "grader"}, headers=admin)
        assert r.status_code == 201, r.text
        grader = bearer(r.json()["token"])
        r = httpx.put(f"{url}/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        body = {"repo": "calc", "base": "main", "patch": fix, "fail_to_pass": list(F2P)}
        r = httpx.post(f"{url}/v1/gates", json=body, headers=grader)
        assert r.status_code == 202, r.text
        gate_id = r.json()["id"]
        deadline = time.monotonic() + 400
        while True:
            r = httpx.get(f"{url}/v1/gates/{gate_id}", headers=grader)
            assert r.status_code == 200, r.text
            if r.json()["status"] == "done":
                break
            assert time.monotonic() < deadline, r.text
            time.sleep(0.5)
        row = r.json()["row"]
        assert row["verdict"] == "pass", row
        assert row["static"] is not None  # the default configuration: static layers on
        assert row["tests"]["base_runs"] == 3
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# ------------------------------------------------ one token's gates never hold up another's


async def _queue(client, body, headers, *names: str) -> list[str]:
    """Queue one gate per name; their ids."""
    ids = []
    for name in names:
        r = await client.post("/v1/gates", json={**body, "id": name}, headers=headers)
        assert r.status_code == 202, r.text
        ids.append(r.json()["id"])
    return ids


async def test_another_tokens_gate_is_next_not_behind_a_whole_queue(tmp_path, env_cache):
    # The attack: queue as many gates as a token may (each takes seconds); another
    # token's gate, queued just after, used to wait for all of them (first come, first
    # served). The order gates ran in is read from the gates table (real SQLite).
    repo = make_repo(tmp_path / "calc")
    body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean), "fail_to_pass": [*F2P]}
    async with service(tmp_path, env_cache) as (client, admin, flooder, victim):
        r = await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        flood = await _queue(client, body, flooder, "flood-0", "flood-1", "flood-2")
        (mine,) = await _queue(client, body, victim, "victim")
        for gate_id in flood:
            await wait_gate(client, gate_id, flooder)
        await wait_gate(client, mine, victim)
    with sqlite3.connect(tmp_path / "svc.sqlite") as con:
        order = [gid for (gid,) in con.execute("SELECT id FROM gates ORDER BY finished")]
    # The flood's first gate was already running; the victim's went next, not fourth.
    assert order == [flood[0], mine, flood[1], flood[2]], order


async def test_a_revoked_tokens_queued_gates_are_not_run(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean), "fail_to_pass": [*F2P]}
    async with service(tmp_path, env_cache) as (client, admin, revoked, other):
        r = await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        await _queue(client, body, revoked, "queued-0", "queued-1", "queued-2")
        token_id = revoked["Authorization"].split("_")[1]
        r = await client.delete(f"/v1/tokens/{token_id}", headers=admin)
        assert r.status_code == 200, r.text
        (after,) = await _queue(client, body, other, "after")
        assert (await wait_gate(client, after, other))["row"]["verdict"] == "pass"
    with sqlite3.connect(tmp_path / "svc.sqlite") as con:
        rows = [json.loads(row) for (row,) in con.execute(
            "SELECT row FROM gates WHERE owner = ?", (token_id,))]  # fmt: skip
    # At most the one already running when the token went was run; the rest never were.
    not_run = [r for r in rows if r["reason"] == "not_run"]
    assert len(not_run) >= 2, rows
    assert all(r["verdict"] == "needs_review" and r.get("tests") is None for r in not_run)
