"""Tokens an operator manages: the admin API, expiry, task scopes, and the CLI's --expires.

A revoked or expired token is refused on its very next request with the same 401
as a token that never existed; a task a scoped token may not use answers exactly
as a task that does not exist.
"""

from __future__ import annotations

import json
import sqlite3
import time

import anyio
import pytest
from click.testing import CliRunner

from gradebox.cli.token import token

pytestmark = pytest.mark.anyio

EVEN = "def is_even(n):\n    return n % 2 == 0\n"
UNKNOWN = {"Authorization": "Bearer gbx_0123456789abcdef_" + "A" * 43}


async def create(svc, **body):
    r = await svc.client.post("/v1/tokens", json=body, headers=svc.admin)
    assert r.status_code == 201, r.text
    return r.json()


async def grade(svc, headers, fn="is_even"):
    return await svc.client.post("/v1/grade", json={"fn": fn, "code": EVEN}, headers=headers)


async def test_the_admin_api_creates_lists_and_revokes(kit):
    async with kit.running() as svc:
        made = await create(svc, role="grader")
        assert made["role"] == "grader" and made["expires"] is None and made["tasks"] is None
        headers = kit.bearer(made["token"])
        assert (await grade(svc, headers)).status_code == 200
        listing = await svc.client.get("/v1/tokens", headers=svc.admin)
        ids = [t["id"] for t in listing.json()["tokens"]]
        assert made["id"] in ids and len(ids) == 4
        # Neither the secret nor its hash is ever listed.
        secret = made["token"].split("_", 2)[2]
        with sqlite3.connect(svc.db) as db:
            hashes = [h for (h,) in db.execute("SELECT hash FROM tokens")]
        assert secret not in listing.text and not any(h in listing.text for h in hashes)
        r = await svc.client.delete(f"/v1/tokens/{made['id']}", headers=svc.admin)
        assert r.json() == {"id": made["id"], "revoked": True}
        refused, unknown = await grade(svc, headers), await grade(svc, UNKNOWN)
        assert (refused.status_code, refused.json()) == (unknown.status_code, unknown.json())
        assert refused.status_code == 401
        r = await svc.client.delete(f"/v1/tokens/{made['id']}", headers=svc.admin)
        assert r.status_code == 404


async def test_token_routes_are_admin_only(kit):
    async with kit.running() as svc:
        for method, url in (
            ("POST", "/v1/tokens"),
            ("GET", "/v1/tokens"),
            ("DELETE", "/v1/tokens/x"),
        ):
            r = await svc.client.request(method, url, json={"role": "admin"}, headers=svc.grader)
            assert r.status_code == 403, (method, url)
        # A grader cannot make itself an admin, nor revoke anyone.
        assert len((await svc.client.get("/v1/tokens", headers=svc.admin)).json()["tokens"]) == 3


async def test_an_expired_token_fails_on_its_next_request(kit):
    async with kit.running() as svc:
        # 5 s: the first grade comes before it even on a busy machine; then the test waits
        # for the expiry itself (polling), not for a fixed nap after it.
        made = await create(svc, role="grader", expires_in_s=5.0)
        headers = kit.bearer(made["token"])
        assert made["expires"] is not None
        assert (await grade(svc, headers)).status_code == 200
        with anyio.fail_after(60):
            while (await grade(svc, headers)).status_code == 200:
                await anyio.sleep(0.2)
        expired, unknown = await grade(svc, headers), await grade(svc, UNKNOWN)
        assert expired.status_code == 401
        assert (expired.json(), dict(expired.headers)["www-authenticate"]) == (
            unknown.json(),
            dict(unknown.headers)["www-authenticate"],
        )


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"role": "root"}, "/role"),
        ({}, "/role"),
        ({"role": "grader", "expires_in_s": -1}, "/expires_in_s"),
        ({"role": "grader", "expires_in_s": 0}, "/expires_in_s"),
        ({"role": "grader", "expires_in_s": True}, "/expires_in_s"),
        ({"role": "grader", "expires_in_s": 1e12}, "/expires_in_s"),
        ({"role": "grader", "tasks": "is_even"}, "/tasks"),
        ({"role": "grader", "tasks": ["a\u0007bell"]}, "/tasks/0"),
        ({"role": "grader", "owner": "x"}, "/owner"),
    ],
)
async def test_bad_token_requests_are_422(kit, body, pointer):
    async with kit.running(register=False) as svc:
        r = await svc.client.post("/v1/tokens", json=body, headers=svc.admin)
        assert r.status_code == 422, r.text
        assert r.json()["problems"][0]["pointer"] == pointer
        assert len((await svc.client.get("/v1/tokens", headers=svc.admin)).json()["tokens"]) == 3


async def test_a_task_out_of_scope_answers_as_an_unknown_task(kit):
    async with kit.running() as svc:
        scoped = kit.bearer((await create(svc, role="grader", tasks=["is_even"]))["token"])
        assert (await grade(svc, scoped)).status_code == 200
        forbidden = await grade(svc, scoped, fn="mean")
        unknown = await grade(svc, scoped, fn="no_such_task")
        assert forbidden.status_code == unknown.status_code == 422
        assert forbidden.json() == unknown.json()
        assert dict(forbidden.headers).keys() == dict(unknown.headers).keys()
        # The same in a run: refused whole, with the same problem as an unknown task.
        run = [{"fn": "is_even", "code": EVEN}, {"fn": "mean", "code": EVEN}]
        r = await svc.client.post("/v1/runs", json=run, headers=scoped)
        run[1]["fn"] = "no_such_task"
        r2 = await svc.client.post("/v1/runs", json=run, headers=scoped)
        assert (
            (r.status_code, r.json())
            == (r2.status_code, r2.json())
            == (
                422,
                {
                    "detail": "unknown task",
                    "problems": [
                        {
                            "in": "body",
                            "pointer": "/1/fn",
                            "message": "no task of this name is registered",
                        }
                    ],
                },
            )
        )
        # An unscoped grader still grades every task.
        assert (await grade(svc, svc.grader, fn="mean")).status_code == 200


async def test_cli_expires_and_task_scope(kit):
    async with kit.running() as svc:
        runner = CliRunner()
        # 5 s: the two grades below come first even on a busy machine (~0.2 s quiet); then the
        # test waits for the expiry itself, however late it is seen.
        argv = ["create", "--role", "grader", "--expires", "5s", "--task", "is_even", "--json"]
        made_at = time.time()
        out = runner.invoke(token, [*argv, "--db", str(svc.db)])
        assert out.exit_code == 0, out.output
        made = json.loads(out.output)
        assert made["tasks"] == ["is_even"] and made["expires"].endswith("Z")
        headers = kit.bearer(made["token"])
        assert (await grade(svc, headers)).status_code == 200
        assert (await grade(svc, headers, fn="mean")).status_code == 422
        listed = runner.invoke(token, ["list", "--db", str(svc.db)]).output
        assert "expires never" in listed and "is_even" in listed
        with anyio.fail_after(60):
            while (await grade(svc, headers)).status_code == 200:
                await anyio.sleep(0.2)
        assert (await grade(svc, headers)).status_code == 401
        assert time.time() >= made_at + 5 - 1, "the token stopped working before it expired"
        assert "(expired)" in runner.invoke(token, ["list", "--db", str(svc.db)]).output


@pytest.mark.parametrize(
    "when", ["soon", "-5m", "2001-01-01T00:00:00Z", "2030-01-01T00:00", "99999d"]
)
def test_cli_refuses_a_bad_expiry(tmp_path, when):
    out = CliRunner().invoke(
        token, ["create", "--role", "grader", "--expires", when, "--db", str(tmp_path / "t.sqlite")]
    )
    assert out.exit_code == 2 and "--expires" in out.output
    assert not (tmp_path / "t.sqlite").exists()  # nothing was created
