"""``gradebox_sandbox_worker_recycles_total`` in ``/metrics``: a broken worker counts;
``gradebox_sandbox_replays_total``: a play the sandbox could not time counts.

Real sandbox, real candidates through the API: ``kill_parent`` (from the sandbox's
attack corpus) SIGKILLs the process that forked it, so the sandbox throws that
worker away; ``stop_parent`` stops its supervisor, so the sandbox goes silent and
the candidate is played again; honest candidates, passing or failing, never move
either counter.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from sandbox.types import Limits

pytestmark = pytest.mark.anyio

ATTACKS = Path(__file__).parents[3] / "sandbox" / "attacks"
KILL = (ATTACKS / "kill_parent.py").read_text()
STOP = (ATTACKS / "stop_parent.py").read_text()
HONEST = "def f(x, marker):\n    return x + 1\n"
WRONG = "def f(x, marker):\n    return x\n"
TASK = {
    # The attack imports os and names its process in a helper: the gate lets it through
    # to the sandbox, which must hold by itself.
    "public": {
        "fn": "f",
        "spec": "Return x plus one.",
        "banned_imports": [],
        "helpers_allowed": True,
    },
    "hidden": [{"fn": "f", "args": [1, "gbx-recycle-svc"], "expect": 2}],
}
NAME = "gradebox_sandbox_worker_recycles_total"


async def recycles(svc, name: str = NAME) -> float:
    r = await svc.client.get("/metrics", headers=svc.admin)
    assert r.status_code == 200
    found = [
        s.value
        for family in text_string_to_metric_families(r.text)
        for s in family.samples
        if s.name == name
    ]
    assert len(found) == 1, r.text  # one series, no labels
    return found[0]


async def grade(svc, code, headers=None):
    r = await svc.client.post(
        "/v1/grade", json={"fn": "f", "code": code}, headers=headers or svc.grader
    )
    assert r.status_code == 200, r.text
    return r.json()


async def test_a_worker_the_candidate_broke_is_counted_and_honest_ones_are_not(kit):
    async with kit.running(register=False) as svc:
        assert (await svc.client.put("/v1/tasks/f", json=TASK, headers=svc.admin)).is_success
        start = await recycles(svc)
        assert (await grade(svc, HONEST))["verdict"] == "pass"
        assert (await grade(svc, WRONG))["verdict"] == "fail"
        assert await recycles(svc) == start
        row = await grade(svc, KILL)
        assert row["verdict"] == "fail" and row.get("infra_error") is None
        after = await recycles(svc)
        assert after >= start + 1
        # Through a run too, and the sandbox goes on grading honest candidates.
        run = [{"fn": "f", "code": KILL}, {"fn": "f", "code": HONEST}]
        r = await svc.client.post("/v1/runs", json=run, headers=svc.other)
        status = await svc.wait_run(r.json()["id"], svc.other)
        assert status["done"] == 2
        assert await recycles(svc) >= after + 1
        assert (await grade(svc, HONEST))["verdict"] == "pass"


async def test_the_recycle_counter_is_admin_only_and_names_no_one(kit):
    async with kit.running(register=False) as svc:
        assert (await svc.client.put("/v1/tasks/f", json=TASK, headers=svc.admin)).is_success
        await grade(svc, KILL)
        # A grader cannot read it (it would learn that some tenant broke a worker).
        assert (await svc.client.get("/metrics", headers=svc.grader)).status_code == 403
        text = (await svc.client.get("/metrics", headers=svc.admin)).text
        line = next(x for x in text.splitlines() if x.startswith(NAME))
        assert "{" not in line  # no label: no token, task or sample behind the count
        for headers in (svc.grader, svc.other):
            assert headers["Authorization"].split()[1] not in text


async def test_a_play_the_sandbox_could_not_time_is_counted_as_replayed(kit):
    # 1 s limit: the stopped supervisor costs two plays of 1 s plus the runner's 3 s grace.
    async with kit.running(register=False, limits=Limits(candidate_timeout_s=1.0)) as svc:
        assert (await svc.client.put("/v1/tasks/f", json=TASK, headers=svc.admin)).is_success
        replays = "gradebox_sandbox_replays_total"
        start = await recycles(svc, replays)
        assert (await grade(svc, HONEST))["verdict"] == "pass"
        assert (await grade(svc, WRONG))["verdict"] == "fail"
        assert await recycles(svc, replays) == start
        row = await grade(svc, STOP)
        assert row["verdict"] == "fail" and row.get("infra_error") is None, row
        assert await recycles(svc, replays) == start + 1  # played once more, then judged
        assert (await grade(svc, HONEST))["verdict"] == "pass"
