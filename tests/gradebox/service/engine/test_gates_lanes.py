"""Gates run inside the lanes: a gate holds one batch place, within the server's workers.

First the lanes alone, with real threads and events: a gate waits for a batch
place as a run's sample does, a waiting gate takes the next freed place before
the next sample (a queue of runs cannot starve it), synchronous grades keep their
reserved worker, and a stop ends the wait. Then a real service (real sandbox, a
real gate process on a real repository, a run of slow samples): sampled all
along, batch samples and gates together never exceed the batch places.
"""

from __future__ import annotations

import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx
import pytest

from gradebox.patches import GateConfig
from gradebox.service import ServiceConfig, Store, create_app, create_token
from gradebox.service.engine.lanes import Lanes, Stopped
from sandbox.command import CommandLimits

from ...patches import conftest as patch_fixtures
from ...patches.conftest import F2P, fix_mean, make_repo
from .test_gates import bearer, wait_gate

env_cache = patch_fixtures.env_cache  # the session's environment cache (a fixture)

DEADLINE_S = 60.0
"""Generous: events decide, the deadline only ends a test that would hang."""


def _gate_in_thread(lanes: Lanes, inside: threading.Event, leave: threading.Event, alive=None):
    errors: list[BaseException] = []

    def run() -> None:
        try:
            with lanes.gate(alive=alive or (lambda: True), tick_s=0.05):
                inside.set()
                assert leave.wait(DEADLINE_S)
        except BaseException as exc:  # handed to the test
            errors.append(exc)
            inside.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def test_a_gate_waits_for_a_batch_place_and_goes_before_the_next_sample():
    lanes = Lanes(workers=2, reserved=1)  # one batch place
    samples = [1]  # one batch sample in the sandbox
    lanes.count_samples(lambda: samples[0])
    inside, leave = threading.Event(), threading.Event()
    thread, errors = _gate_in_thread(lanes, inside, leave)
    assert not inside.wait(0.3)  # the place is the sample's: the gate waits
    samples[0] = 0
    assert not lanes.batch_may_start(0)  # freed, but a waiting gate goes first
    lanes.freed()
    assert inside.wait(DEADLINE_S) and not errors
    assert lanes.gates_inflight == 1
    assert not lanes.batch_may_start(0)  # the gate holds the batch place
    with lanes.sync():  # the reserved worker is still there for a synchronous grade
        assert lanes.sync_inflight + lanes.gates_inflight + samples[0] <= lanes.workers
    leave.set()
    thread.join(DEADLINE_S)
    assert lanes.gates_inflight == 0 and lanes.batch_may_start(0)


def test_gates_never_exceed_the_batch_places():
    lanes = Lanes(workers=4, reserved=1)  # three batch places
    lanes.count_samples(lambda: 1)
    entered = [threading.Event() for _ in range(3)]
    leave = threading.Event()
    started = [_gate_in_thread(lanes, e, leave) for e in entered]
    deadline = time.monotonic() + DEADLINE_S
    while sum(e.is_set() for e in entered) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not any(errors for _, errors in started)
    assert sum(e.is_set() for e in entered) == 2  # 1 sample + 2 gates fill the 3 places
    assert lanes.gates_inflight == 2
    leave.set()
    for thread, errors in started:
        thread.join(DEADLINE_S)
        assert not errors
    assert all(e.is_set() for e in entered) and lanes.gates_inflight == 0


def test_a_stop_ends_a_gates_wait():
    lanes = Lanes(workers=2, reserved=1)
    lanes.count_samples(lambda: 1)
    alive = threading.Event()
    alive.set()
    inside, leave = threading.Event(), threading.Event()
    thread, errors = _gate_in_thread(lanes, inside, leave, alive=alive.is_set)
    assert not inside.wait(0.2)
    alive.clear()
    thread.join(DEADLINE_S)
    assert len(errors) == 1 and isinstance(errors[0], Stopped)
    assert lanes.gates_inflight == 0 and lanes.batch_may_start(0)


# ------------------------------------------------------------------ a real service


SLOW = "import time\ndef is_even(n):\n    time.sleep(0.4)\n    return n % 2 == 0\n"


@asynccontextmanager
async def _service(tmp: Path, env_cache: Path):
    db = tmp / "svc.sqlite"
    store = Store(db)
    tokens = [bearer(create_token(store, r)) for r in ("admin", "grader")]
    store.close()
    app = create_app(ServiceConfig(db=db, workers=2, sync_reserved_workers=1))
    app.state.gates.config = GateConfig(
        limits=CommandLimits(timeout_s=120), base_runs=1, env_cache=env_cache, static=None
    )
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://svc", timeout=60) as client,
    ):
        with anyio.fail_after(180):
            while (await client.get("/readyz")).status_code != 200:
                await anyio.sleep(0.1)
        yield app, client, *tokens


@pytest.mark.anyio
async def test_a_gate_and_a_run_share_the_batch_places_of_a_real_service(tmp_path, env_cache):
    repo = make_repo(tmp_path / "calc")
    async with _service(tmp_path, env_cache) as (app, client, admin, grader):
        lanes: Lanes = app.state.service.lanes
        gates = app.state.gates
        seen: list[tuple[int, int]] = []
        watching = threading.Event()
        watching.set()

        def watch() -> None:  # the gate's process is running: what the gate queue says
            while watching.is_set():
                seen.append((lanes.samples_inflight, int(gates.running_pid is not None)))
                time.sleep(0.005)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        hidden = [{"fn": "is_even", "args": [n], "expect": n % 2 == 0} for n in range(3)]
        task = {"public": {"spec": "Even?", "signature": "def is_even(n: int) -> bool"},
                "hidden": hidden}  # fmt: skip
        assert (await client.put("/v1/tasks/is_even", json=task, headers=admin)).status_code == 200
        run = [{"id": f"s{i}", "fn": "is_even", "code": SLOW} for i in range(8)]
        r = await client.post("/v1/runs", json=run, headers=grader)
        assert r.status_code in (200, 202), r.text
        run_id = r.json()["id"]
        r = await client.put("/v1/repos/calc", json={"path": str(repo.path)}, headers=admin)
        assert r.status_code == 200, r.text
        body = {"repo": "calc", "base": "main", "patch": repo.patch(fix_mean),
                "fail_to_pass": list(F2P)}  # fmt: skip
        r = await client.post("/v1/gates", json=body, headers=grader)
        assert r.status_code == 202, r.text
        done = await wait_gate(client, r.json()["id"], grader)
        assert done["row"]["verdict"] == "pass", done["row"]
        with anyio.fail_after(240):
            while (await client.get(f"/v1/runs/{run_id}", headers=grader)).json()[
                "status"
            ] != "done":
                await anyio.sleep(0.2)
        watching.clear()
        watcher.join(DEADLINE_S)
    assert any(running == 1 for _, running in seen), "the gate's process was never seen"
    assert any(samples >= 1 for samples, _ in seen), "no batch sample was ever seen"
    over = [(s, g) for s, g in seen if s + g > lanes.batch_jobs]
    assert not over, f"batch samples and gates over {lanes.batch_jobs} place(s): {over[:5]}"
