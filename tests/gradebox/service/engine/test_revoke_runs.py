"""A revoked or expired token's queued runs stop: cancelled with a reason, in process.

Real sandbox, slow candidates: a run is under way when its token is revoked
through the admin API (or expires); no new sample of it starts (those in flight
finish), it is cancelled with ``token revoked`` / ``token expired``, and another
token's run goes on to the end. The CLI path (another process writes the
database) is tested on a real server in ``test_e2e_runs.py``.
"""

from __future__ import annotations

import sqlite3

import anyio
import pytest

pytestmark = pytest.mark.anyio

SLOW = "import time\n\n\ndef inc(x):\n    time.sleep(0.15)\n    return x + 1\n"
TASK = {
    "public": {"fn": "inc", "spec": "Return x plus one."},
    "hidden": [{"fn": "inc", "args": [1], "expect": 2}],
}


def token_id(headers) -> str:
    return headers["Authorization"].split("_")[1]


async def submit(svc, headers, n: int) -> str:
    samples = [{"id": str(i), "fn": "inc", "code": SLOW} for i in range(n)]
    r = await svc.client.post("/v1/runs", json=samples, headers=headers)
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


async def status(svc, run_id) -> dict:
    r = await svc.client.get(f"/v1/runs/{run_id}", headers=svc.admin)
    assert r.status_code == 200, r.text
    return r.json()


async def until(svc, run_id, check, timeout: float = 30) -> dict:
    with anyio.fail_after(timeout):
        while not check(info := await status(svc, run_id)):
            await anyio.sleep(0.02)
    return info


def ungraded(db, run_id) -> int:
    with sqlite3.connect(db) as con:
        sql = "SELECT count(*) FROM samples WHERE run_id = ? AND row IS NULL"
        return int(con.execute(sql, (run_id,)).fetchone()[0])


async def test_revoking_through_the_api_cancels_that_tokens_runs_only(kit):
    async with kit.running(register=False) as svc:
        assert (await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)).is_success
        mine, theirs = await submit(svc, svc.grader, 16), await submit(svc, svc.other, 16)
        queued = await submit(svc, svc.grader, 4)  # not started yet: cancelled all the same
        await until(svc, mine, lambda x: x["done"] >= 1)
        r = await svc.client.delete(f"/v1/tokens/{token_id(svc.grader)}", headers=svc.admin)
        assert r.status_code == 200
        for run_id in (mine, queued):
            info = await until(
                svc, run_id, lambda x: x["status"] in ("cancelled", "done"), timeout=10
            )
            assert (info["status"], info["reason"]) == ("cancelled", "token revoked")
        at_cancel = (await status(svc, mine))["done"]
        # The other token's run is not touched: it runs to its end.
        other = await until(svc, theirs, lambda x: x["status"] == "done", timeout=60)
        assert (other["done"], other["reason"]) == (16, None)
        # Only samples in flight at the revoke finished; none started after it.
        final = await status(svc, mine)
        assert final["done"] <= at_cancel + 2 < 16
        assert ungraded(svc.db, mine) == 16 - final["done"]
        assert (await status(svc, queued))["done"] == 0
        # The token is refused, and its runs answer it as runs that do not exist.
        assert (await svc.client.get(f"/v1/runs/{mine}", headers=svc.grader)).status_code == 401


async def test_an_expired_tokens_runs_are_cancelled(kit):
    async with kit.running(register=False) as svc:
        assert (await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)).is_success
        made = await svc.client.post(
            "/v1/tokens", json={"role": "grader", "expires_in_s": 2.0}, headers=svc.admin
        )
        headers = kit.bearer(made.json()["token"])
        run_id = await submit(svc, headers, 40)  # ~6 s of grading: it expires first
        theirs = await submit(svc, svc.other, 4)
        info = await until(svc, run_id, lambda x: x["status"] == "cancelled", timeout=20)
        assert info["reason"] == "token expired" and info["done"] < 40
        assert (await until(svc, theirs, lambda x: x["status"] == "done"))["done"] == 4
        assert (await svc.client.get(f"/v1/runs/{run_id}", headers=headers)).status_code == 401


async def test_a_grader_cannot_cancel_another_tokens_run(kit):
    async with kit.running(register=False) as svc:
        assert (await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)).is_success
        run_id = await submit(svc, svc.grader, 6)
        # Another grader: not its run (404, as a run that does not exist), nor its token.
        assert (await svc.client.delete(f"/v1/runs/{run_id}", headers=svc.other)).status_code == 404
        r = await svc.client.delete(f"/v1/tokens/{token_id(svc.grader)}", headers=svc.other)
        assert r.status_code == 403
        assert (await status(svc, run_id))["reason"] is None
        # Its owner may cancel it, and the run says so.
        r = await svc.client.delete(f"/v1/runs/{run_id}", headers=svc.grader)
        assert (r.json()["status"], r.json()["reason"]) == ("cancelled", "cancelled on request")
        info = await until(svc, run_id, lambda x: x["status"] == "cancelled")
        assert info["reason"] == "cancelled on request"
