"""Lanes: a synchronous grade never waits behind a queued batch run (real sandbox)."""

from __future__ import annotations

import statistics
import time

import anyio
import pytest

from gradebox.service.engine.lanes import Lanes

CASES = 5  # examples/ has five hidden cases for is_even
SLEEP = 1.0
"""Each case of a batch sample sleeps this long (under the 2 s case limit): one sample holds
a sandbox worker for 5 s, so a grade that waited behind it cannot pass for a slow machine."""
SLOW = f"import time\ndef is_even(n):\n    time.sleep({SLEEP})\n    return n % 2 == 0\n"
FAST = (
    "def is_even(n):\n    if type(n) is not int:\n        raise TypeError('int')\n"
    "    return n % 2 == 0\n"
)


def test_batch_keeps_a_worker_free_and_yields_to_sync_grades():
    lanes = Lanes(workers=2, reserved=1)
    assert lanes.batch_jobs == 1
    assert lanes.batch_may_start(0) and not lanes.batch_may_start(1)
    with lanes.sync(), lanes.sync():
        assert not lanes.batch_may_start(0)  # two sync grades fill both workers
    freed = []
    lanes.on_free(lambda: freed.append(True))
    with lanes.sync():
        assert lanes.sync_inflight == 1 and lanes.batch_may_start(0)
    assert freed == [True] and lanes.sync_inflight == 0


def test_one_worker_cannot_be_reserved_so_batch_yields():
    lanes = Lanes(workers=1, reserved=1)
    assert lanes.batch_jobs == 1 and lanes.batch_may_start(0)
    with lanes.sync():
        assert not lanes.batch_may_start(0)


async def _timed_grade(svc) -> float:
    t0 = time.perf_counter()
    r = await svc.client.post("/v1/grade", json={"fn": "is_even", "code": FAST}, headers=svc.grader)
    assert r.status_code == 200, r.text
    assert r.json()["verdict"] == "pass"
    return time.perf_counter() - t0


@pytest.mark.anyio
async def test_sync_grade_does_not_wait_behind_a_big_run(kit):
    slow_sample = CASES * SLEEP  # one batch sample holds a sandbox worker this long
    async with kit.running() as svc:
        control = statistics.median([await _timed_grade(svc) for _ in range(5)])
        run = [{"fn": "is_even", "code": SLOW}] * 40
        r = await svc.client.post("/v1/runs", json=run, headers=svc.other)
        run_id = r.json()["id"]
        with anyio.fail_after(10):
            while (await svc.client.get(f"/v1/runs/{run_id}", headers=svc.other)).json()[
                "status"
            ] != "running":
                await anyio.sleep(0.02)
        await anyio.sleep(0.1)  # a batch sample is in the sandbox now
        under_load = [await _timed_grade(svc) for _ in range(8)]
        info = (await svc.client.get(f"/v1/runs/{run_id}", headers=svc.other)).json()
        assert info["status"] == "running" and info["done"] < 40  # still queued behind
        # The alternative is waiting behind a batch sample (up to 5 s); a plain grade takes
        # ~0.05 s quiet and under a second at load 14 on 2 cores: half a sample tells them apart.
        assert max(under_load) < slow_sample / 2, (control, under_load)
        await svc.client.delete(f"/v1/runs/{run_id}", headers=svc.other)
