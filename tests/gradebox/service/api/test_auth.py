"""Bearer tokens: 401 without a valid one, 403 for a grader on admin routes, runs private."""

from __future__ import annotations

import json
import sqlite3

import pytest
from click.testing import CliRunner

from gradebox.cli.token import token
from gradebox.service import Store, authenticate, create_token

pytestmark = pytest.mark.anyio

ROUTES = [
    ("PUT", "/v1/tasks/is_even"),
    ("GET", "/v1/tasks/is_even"),
    ("POST", "/v1/grade"),
    ("POST", "/v1/runs"),
    ("GET", "/v1/runs/abc"),
    ("GET", "/v1/runs/abc/results"),
    ("GET", "/v1/runs/abc/diff/def"),
    ("DELETE", "/v1/runs/abc"),
]
BAD_HEADERS = [
    {},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer nonsense"},
    {"Authorization": "Basic YWRtaW46YWRtaW4="},
    {"Authorization": "Bearer gbx_0123456789abcdef_" + "A" * 43},
    {"Authorization": "Bearer gbx_ünïcödé".encode()},
]


async def test_401_without_a_valid_token(kit):
    async with kit.running() as svc:
        real = svc.grader["Authorization"]
        wrong_secret = {
            "Authorization": real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB")
        }
        for method, path in ROUTES:
            for headers in [*BAD_HEADERS, wrong_secret]:
                r = await svc.client.request(method, path, headers=headers, content=b"{}")
                assert r.status_code == 401, (method, path, headers, r.text)
                assert r.json() == {"detail": "unauthorized"}
                assert r.headers["www-authenticate"] == "Bearer"


async def test_403_for_grader_on_admin_routes(kit):
    async with kit.running() as svc:
        body = kit.example_tasks()["is_even"]
        for method, path in ROUTES[:2]:
            r = await svc.client.request(method, path, headers=svc.grader, json=body)
            assert r.status_code == 403
            assert r.json() == {"detail": "forbidden"}


async def test_runs_are_private_to_their_token(kit):
    async with kit.running() as svc:
        r = await svc.client.post("/v1/runs", json=kit.example_samples()[:2], headers=svc.grader)
        run = r.json()["id"]
        await svc.wait_run(run, svc.grader)
        missing = "0" * 24
        for method, path in [
            ("GET", "/v1/runs/{}"),
            ("GET", "/v1/runs/{}/results"),
            ("GET", f"/v1/runs/{{}}/diff/{run}"),
            ("GET", f"/v1/runs/{run}/diff/{{}}"),
            ("DELETE", "/v1/runs/{}"),
        ]:
            theirs = await svc.client.request(method, path.format(run), headers=svc.other)
            nobody = await svc.client.request(method, path.format(missing), headers=svc.other)
            # Another grader's run is indistinguishable from a run that does not exist.
            assert theirs.status_code == nobody.status_code == 404
            assert theirs.json() == nobody.json() == {"detail": "not found"}
        # The owner and an admin see it.
        assert (await svc.client.get(f"/v1/runs/{run}", headers=svc.grader)).status_code == 200
        assert (await svc.client.get(f"/v1/runs/{run}", headers=svc.admin)).status_code == 200


def test_tokens_are_stored_hashed(tmp_path):
    db = tmp_path / "t.sqlite"
    store = Store(db)
    value = create_token(store, "grader")
    assert authenticate(store, f"Bearer {value}").role == "grader"
    assert authenticate(store, f"bearer {value}").role == "grader"
    assert authenticate(store, f"Bearer {value}x") is None
    store.close()
    dump = "\n".join(sqlite3.connect(db).iterdump())
    assert value not in dump
    assert value.split("_", 2)[2] not in dump  # not even the secret part


def test_token_create_cli(tmp_path):
    db = tmp_path / "t.sqlite"
    runner = CliRunner()
    out = runner.invoke(token, ["create", "--role", "admin", "--db", str(db)])
    assert out.exit_code == 0, out.output
    value = out.output.strip()
    store = Store(db)
    assert authenticate(store, f"Bearer {value}").role == "admin"
    out = runner.invoke(token, ["create", "--role", "grader", "--db", str(db), "--json"])
    assert json.loads(out.output)["role"] == "grader"
    out = runner.invoke(token, ["create", "--role", "root", "--db", str(db)])
    assert out.exit_code == 2


def test_token_list_shows_ids_and_roles_never_a_secret(tmp_path):
    db = tmp_path / "t.sqlite"
    runner = CliRunner()
    values = [
        runner.invoke(token, ["create", "--role", role, "--db", str(db)]).output.strip()
        for role in ("admin", "grader")
    ]
    out = runner.invoke(token, ["list", "--db", str(db), "--json"])
    assert out.exit_code == 0, out.output
    listed = [json.loads(line) for line in out.output.splitlines()]
    assert [(t["id"], t["role"]) for t in listed] == [
        (v.split("_")[1], role) for v, role in zip(values, ("admin", "grader"), strict=True)
    ]
    for value in values:
        assert value.split("_", 2)[2] not in out.output
    plain = runner.invoke(token, ["list", "--db", str(db)])
    assert all(v.split("_")[1] in plain.output for v in values)


async def test_a_revoked_token_fails_on_its_next_request(kit):
    async with kit.running() as svc:
        sample = kit.example_samples()[0]
        assert (
            await svc.client.post("/v1/grade", json=sample, headers=svc.grader)
        ).status_code == 200
        grader_id = svc.grader["Authorization"].split("_")[1]
        out = CliRunner().invoke(token, ["revoke", grader_id, "--db", str(svc.db)])
        assert out.exit_code == 0, out.output
        # The server is running; the very next request with that token is refused.
        again = await svc.client.post("/v1/grade", json=sample, headers=svc.grader)
        assert again.status_code == 401
        # Other tokens are untouched.
        assert (
            await svc.client.post("/v1/grade", json=sample, headers=svc.other)
        ).status_code == 200
        missing = CliRunner().invoke(token, ["revoke", grader_id, "--db", str(svc.db)])
        assert missing.exit_code == 2 and "no token" in missing.output
