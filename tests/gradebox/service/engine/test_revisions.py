"""A run keeps the task revision it started with; rows record the revision they used.

The task is replaced while the run is being graded (real sandbox, a slow
candidate): every row of the run is still graded against the first revision's
cases, later grades against the new ones, and old revisions are dropped once no
unfinished run needs them.
"""

from __future__ import annotations

import json
import sqlite3

import anyio
import pytest

pytestmark = pytest.mark.anyio

SLOW = "import time\n\n\ndef inc(x):\n    time.sleep(0.15)\n    return x + 1\n"


def task(expect: int) -> dict:
    return {
        "public": {"fn": "inc", "spec": "Return x plus one."},
        "hidden": [{"fn": "inc", "args": [1], "expect": expect}],
        "disclosure": "cases",
    }


async def put(svc, body):
    r = await svc.client.put("/v1/tasks/inc", json=body, headers=svc.admin)
    assert r.status_code == 200, r.text
    return r.json()["revision"]


def revisions(db) -> list[int]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT revision FROM task_revisions WHERE task = 'inc' ORDER BY 1")
        return [r for (r,) in rows]


async def test_a_run_keeps_its_task_revision_when_the_task_is_replaced(kit):
    async with kit.running(register=False) as svc:
        assert await put(svc, task(2)) == 1
        samples = [{"id": str(i), "fn": "inc", "code": SLOW} for i in range(8)]
        r = await svc.client.post("/v1/runs", json=samples, headers=svc.grader)
        run_id = r.json()["id"]
        with anyio.fail_after(30):  # replace it once the run is under way
            while (await svc.client.get(f"/v1/runs/{run_id}", headers=svc.grader)).json()[
                "done"
            ] < 1:
                await anyio.sleep(0.02)
        # The new revision says 1 + 1 == 3: a run pinned to revision 1 must not see it.
        assert await put(svc, task(3)) == 2
        assert revisions(svc.db) == [1, 2]  # revision 1 is kept while the run needs it
        status = await svc.wait_run(run_id, svc.grader)
        assert status["done"] == 8
        text = (await svc.client.get(f"/v1/runs/{run_id}/results", headers=svc.grader)).text
        rows = [json.loads(x) for x in text.splitlines()]
        assert [(r["task_revision"], r["verdict"]) for r in rows] == [(1, "pass")] * 8
        # A grade now uses revision 2 and says so.
        r = await svc.client.post("/v1/grade", json={"fn": "inc", "code": SLOW}, headers=svc.grader)
        assert (r.json()["task_revision"], r.json()["verdict"]) == (2, "fail")
        # A run submitted now is pinned to revision 2.
        r = await svc.client.post("/v1/runs", json=samples[:1], headers=svc.grader)
        await svc.wait_run(r.json()["id"], svc.grader)
        text = (await svc.client.get(f"/v1/runs/{r.json()['id']}/results", headers=svc.grader)).text
        assert '"task_revision":2' in text.replace(" ", "")
        # No unfinished run needs revision 1 (nor 2) any more: the next write drops them.
        assert await put(svc, task(2)) == 3
        assert revisions(svc.db) == [3]


async def test_a_database_from_before_revisions_keeps_grading(kit):
    async with kit.running(register=False) as svc:
        await put(svc, task(2))
        owner = svc.grader["Authorization"].split("_")[1]  # a live token's id
    # An older database: no kept revisions, a run without pinned tasks.
    with sqlite3.connect(kit.tmp / "svc.sqlite") as conn:
        conn.execute("DELETE FROM task_revisions")
        conn.execute(
            "INSERT INTO runs (id, owner, status, created, total) VALUES (?, ?, ?, ?, ?)",
            ("old", owner, "queued", 0, 1),
        )
        sample = {"id": "a", "fn": "inc", "code": "def inc(x):\n    return x + 1\n"}
        conn.execute(
            "INSERT INTO samples (run_id, idx, sample) VALUES (?, ?, ?)",
            ("old", 0, json.dumps(sample)),
        )
    async with kit.running(register=False) as svc:
        assert revisions(svc.db) == [1]  # back-filled from the current task on start
        status = await svc.wait_run("old", svc.admin)
        assert status["done"] == 1
        text = (await svc.client.get("/v1/runs/old/results", headers=svc.admin)).text
        assert '"task_revision":1' in text.replace(" ", "") and '"verdict":"pass"' in text.replace(
            " ", ""
        )
