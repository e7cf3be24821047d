"""Attacks on the service's capacity, as a grader-token client who has read the source.

Each test is the attack and its control in one: one client misbehaves (a huge
body, a body a byte at a time, a sample slow to gate, a huge run, many grades)
and another client, or the same one, must still be answered promptly. Times are
judged against a control request, or the attack itself, measured in the same
test (a busy machine stretches both), with a generous floor, never against a
fixed figure alone; where an outcome or an order of events decides, it does.
"""

from __future__ import annotations

import json
import statistics
import threading
import time
import warnings

import anyio
import httpx
import pytest
import uvicorn
from ports import free_port

from gradebox.pipeline.gate import gate
from gradebox.pipeline.tests import FrontJob
from gradebox.service import ServiceConfig, Store, create_app, create_token
from gradebox.service.engine.front import FrontPool
from gradebox.service.rows import INFRA_MESSAGE

pytestmark = pytest.mark.anyio

SLOW = "import time\ndef is_even(n):\n    time.sleep(0.2)\n    return n % 2 == 0\n"
GOOD = {"fn": "is_even", "code": "def is_even(n):\n    return n % 2 == 0\n"}
# The longest code the server takes (128 KiB): ~0.3 s of extract and gate on one core.
HEAVY = {"fn": "is_even", "code": "def is_even(n):\n    return n % 2 == 0\n" + "y = 1\n" * 21_000}


async def _timed(coro) -> tuple[float, httpx.Response]:
    t0 = time.perf_counter()
    r = await coro
    return time.perf_counter() - t0, r


async def _control(svc, n: int = 5) -> float:
    return statistics.median([(await _timed(svc.client.get("/healthz")))[0] for _ in range(n)])


async def _while(svc, attack, probe, delay: float = 0.05):
    """Start ``attack``; ``delay`` s later send ``probe``; return both, timed.

    The probe is timed from when it was due (start + ``delay``), so time the
    event loop spent blocked before it could even be sent counts against it.
    """
    out: dict[str, object] = {}

    async def run_attack():
        out["attack"] = await _timed(attack())

    async with anyio.create_task_group() as tg:
        due = time.perf_counter() + delay
        tg.start_soon(run_attack)
        await anyio.sleep(delay)
        r = await probe()
        out["probe"] = (time.perf_counter() - due, r)
    return out["attack"], out["probe"]


async def _not_stalled(play, bound, tries: int = 3):
    """Play ``_while`` until the probe waited less than ``bound(spent, control)``.

    The probe's wait against the attack's own time (both stretched alike by a busy
    machine) tells a server that served the probe beside the attack from one that
    served it after. One play on a busy 2-core machine can still lose that race (the
    probe's thread descheduled at the wrong moment, GIL hand-offs of 5 ms each): a
    server that blocks its event loop fails every play, so it is played again, at
    most ``tries`` times. Returns the last play's ``((spent, r), (waited, probe))``.
    """
    seen = []
    for _ in range(tries):
        played = await play()
        (spent, _), (waited, _) = played
        seen.append((round(waited, 3), round(bound(spent), 3), round(spent, 3)))
        if waited < bound(spent):
            return played
    raise AssertionError(
        f"the probe waited past its bound in every play (waited, bound, spent): {seen}"
    )


async def test_huge_jsonl_body_does_not_stall_other_clients(kit):
    # 8 MB of JSON Lines, ~290,000 samples: 29 times the per-run cap.
    body = b'{"fn":"is_even","code":"x"}\n' * 290_000
    async with kit.running() as svc:
        control = await _control(svc)
        # On the loop, the probe waits for the whole body (it is answered after it); off it,
        # at once. A busy machine stretches the attack too, hence its half as a floor.
        (_, r), (_, health) = await _not_stalled(
            lambda: _while(
                svc,
                lambda: svc.client.post("/v1/runs", content=body, headers=svc.grader),
                lambda: svc.client.get("/healthz"),
            ),
            lambda spent: max(0.5, 20 * control, spent / 2),
        )
        assert r.status_code == 413 and "too many samples" in r.json()["detail"]
        assert health.status_code == 200


async def test_a_full_valid_run_is_checked_off_the_event_loop(kit):
    samples = [
        {"fn": "is_even", "code": f"def is_even(n):\n    return {i} > 0\n"} for i in range(10_000)
    ]
    # The parse budget (5 s) is not what is tested, and 10,000 samples near it on a busy machine.
    async with kit.running(rate_burst=10_000, parse_budget_s=120) as svc:
        control = await _control(svc)

        async def play():
            played = await _while(
                svc,
                lambda: svc.client.post("/v1/runs", json=samples, headers=svc.grader),
                lambda: svc.client.get("/healthz"),
            )
            (_, r), (_, health) = played
            assert r.status_code == 202, r.text
            await svc.client.delete(f"/v1/runs/{r.json()['id']}", headers=svc.grader)
            assert health.status_code == 200
            return played

        await _not_stalled(play, lambda spent: max(0.5, 20 * control, spent / 2))


async def test_a_sample_slow_to_gate_does_not_hold_up_another_task(kit):
    other = {"fn": "echo", "code": "def echo(s):\n    return s\n"}
    async with kit.running() as svc:
        task = {"hidden": [{"args": ["a"], "expect": "a"}], "disclosure": "cases"}
        await svc.client.put("/v1/tasks/echo", json=task, headers=svc.admin)
        control = statistics.median(
            [(await _timed(svc.client.post("/v1/grade", json=other, headers=svc.other)))[0]
             for _ in range(3)]
        )  # fmt: skip

        async def heavy_load():  # 4 at once: the most one token may have in flight
            async with anyio.create_task_group() as tg:
                for _ in range(4):
                    tg.start_soon(
                        lambda: svc.client.post("/v1/grade", json=HEAVY, headers=svc.grader)
                    )
            return None

        # The heavy samples gate for about a second together; another task's grade must
        # not wait behind them (under one shared lock it waited for all four; in threads,
        # with no lock, ~1.3 s for the GIL: the front now runs in worker processes).
        # Decided against the attack's own time (a busy machine stretches both): behind
        # the heavy samples the grade waited about as long as they took.
        (_, _), (_, r) = await _not_stalled(
            lambda: _while(
                svc,
                heavy_load,
                lambda: svc.client.post("/v1/grade", json=other, headers=svc.other),
                delay=0.05,
            ),
            lambda spent: spent / 2,
        )
        assert r.status_code == 200 and r.json()["verdict"] == "pass", (r.text, control)


async def test_extract_and_gate_have_a_time_budget(kit):
    async with kit.running(front_budget_s=300) as svc:  # the control: the same grade, no budget
        control, r = await _timed(svc.client.post("/v1/grade", json=HEAVY, headers=svc.grader))
        assert r.json()["infra_error"] is None, r.text  # gated and run (it fails two cases)
    # Every sample to the workers (none is checked in the grading thread), so the last
    # grade below goes through the pool whose worker was killed.
    async with kit.running(front_budget_s=0.05, front_inline_chars=0) as svc:
        spent, r = await _timed(svc.client.post("/v1/grade", json=HEAVY, headers=svc.grader))
        row = r.json()
        assert row["verdict"] == "needs_review" and row["infra_error"] == INFRA_MESSAGE
        # ~0.05 s against ~0.3 s quiet (both stretch on a busy machine): not waited out.
        assert spent < control / 2, (spent, control)
        too_long = HEAVY | {"code": HEAVY["code"] * 2}
        r = await svc.client.post("/v1/grade", json=too_long, headers=svc.grader)
        assert r.status_code == 422 and r.json()["problems"][0]["pointer"] == "/code"
        # And the server grades on: its killed worker is replaced. A small sample's extract
        # and gate fits 0.05 s on a quiet machine but not always on a busy one (the
        # replacement starting beside it), so it is retried until a deadline: a pool left
        # without workers answers an infrastructure error every time and fails here.
        sample, deadline, verdicts = kit.example_samples()[0], time.monotonic() + 120, []
        while time.monotonic() < deadline:
            r = await svc.client.post("/v1/grade", json=sample, headers=svc.grader)
            row = r.json()
            verdicts.append(row["verdict"])
            if row["verdict"] == "pass":
                break
            assert row["infra_error"] == INFRA_MESSAGE, row
            await anyio.sleep(0.1)  # a pause between tries, not a bound
        assert verdicts[-1] == "pass", verdicts


async def test_only_a_small_sample_is_gated_outside_the_workers(kit, monkeypatch):
    """Up to ``front_inline_chars`` the grading thread checks the sample; above, a worker.

    The threshold is what bounds the thread's work (no budget stops it there), so a
    sample one character above it must go to the workers. The pool is the real one;
    its ``check`` is counted (a budget of 0 could not tell the paths apart: on a busy
    machine a worker answered before the server looked, and it graded).
    """
    sent: list[FrontJob] = []
    real = FrontPool.check

    def counted(self: FrontPool, job: FrontJob, budget_s: float) -> object:
        sent.append(job)
        return real(self, job, budget_s)

    monkeypatch.setattr(FrontPool, "check", counted)
    small = kit.example_samples()[0]
    limit = len(small["reply"])
    over = GOOD | {"code": GOOD["code"] + "#" * (limit + 1 - len(GOOD["code"]))}
    async with kit.running(front_inline_chars=limit) as svc:
        r = await svc.client.post("/v1/grade", json=small, headers=svc.grader)
        assert r.json()["verdict"] == "pass", r.text
        assert sent == []  # checked in the grading thread
        r = await svc.client.post("/v1/grade", json=over, headers=svc.grader)
        assert r.json()["infra_error"] is None, r.text  # graded (it fails two cases)
        assert [job.code for job in sent] == [over["code"]]  # one character over: a worker
    sent.clear()
    async with kit.running(front_inline_chars=0) as svc:
        r = await svc.client.post("/v1/grade", json=small, headers=svc.grader)
        assert r.json()["verdict"] == "pass", r.text
        assert [job.reply for job in sent] == [small["reply"]]  # 0: every sample to a worker


def test_gate_from_many_threads_is_right_under_w_error():
    # `python -W error`: a SyntaxWarning would become a SyntaxError. The gate must still
    # say "ok" for valid code from any number of threads at once, and leave the filters.
    code = 'def f(x):\n    """\\d"""\n    return x is 1\n'
    results: list[str] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("error")
        before = list(warnings.filters)

        def work():
            for _ in range(200):
                g = gate(code, fn="f", banned=("os",), claim_text="O(1)", claim=None,
                         allow_loops=False)  # fmt: skip
                results.append(g.syntax)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        after = [f for f in warnings.filters if f not in before]
        assert set(results) == {"ok"} and len(results) == 1600
        assert not seen
        assert len(after) <= 1  # at most our own filter for candidate code, nothing else
        assert warnings.filters[-len(before) :] == before


async def test_slowloris_body_gets_408_and_holds_no_slot(kit):
    async def one_byte_at_a_time():
        for _ in range(40):  # 10 s if nothing stops it
            yield b" "
            await anyio.sleep(0.25)

    async with kit.running(per_token_concurrency=1, body_timeout_s=1.0) as svc:
        (spent, slow), (_, r) = await _while(
            svc,
            lambda: svc.client.post("/v1/grade", content=one_byte_at_a_time(), headers=svc.grader),
            lambda: svc.client.post("/v1/grade", json=GOOD, headers=svc.grader),
            delay=0.3,
        )
        assert r.status_code == 200, r.text  # the same token: the slow body held no slot
        assert slow.status_code == 408, slow.text  # the whole body would be a 422
        assert spent < 6.0, spent  # ~1.1 s: the 1 s body timeout, not the 10 s body


async def test_slowloris_on_a_real_socket(sandbox, tmp_path):
    db = tmp_path / "svc.sqlite"
    store = Store(db)
    admin, grader = create_token(store, "admin"), create_token(store, "grader")
    store.close()
    config = ServiceConfig(db=db, body_timeout_s=1.0, per_token_concurrency=1)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(config, sandbox=sandbox), port=port, log_level="warning")
    )
    url = f"http://127.0.0.1:{port}"
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.02)
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            task = {"hidden": [{"args": [2], "expect": True}]}
            auth = {"Authorization": f"Bearer {admin}"}
            assert (await client.put("/v1/tasks/is_even", json=task, headers=auth)).is_success
            stream = await anyio.connect_tcp("127.0.0.1", port)
            head = (
                f"POST /v1/grade HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {grader}\r\n"
                "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
            )
            t0 = time.perf_counter()
            await stream.send(head.encode())
            reply = b""
            with anyio.move_on_after(60):  # a hang bound; the 408 decides
                for _ in range(100):  # one byte every 0.2 s and a grade: 20 s or more
                    try:
                        await stream.send(b" ")
                        with anyio.move_on_after(0.2):
                            reply += await stream.receive()
                    except (anyio.BrokenResourceError, anyio.EndOfStream, OSError):
                        break
                    if reply:
                        break
                    r = await client.post(
                        "/v1/grade", json=GOOD, headers={"Authorization": f"Bearer {grader}"}
                    )
                    assert r.status_code == 200, r.text  # no slot held by the slow body
            spent = time.perf_counter() - t0
            await stream.aclose()
        server.should_exit = True
    assert reply.startswith(b"HTTP/1.1 408"), reply[:200]
    # ~1.5 s: the 1 s body timeout; the whole body (100 bytes, each after a grade) takes
    # 20 s or more, so a busy machine's slower grades stay far from it.
    assert spent < 12.0, spent


async def test_a_small_run_is_not_stuck_behind_another_tokens_big_run(kit):
    # Both workers to batch (none kept for synchronous grades): fairness between runs.
    async with kit.running(rate_burst=1_000, sync_reserved_workers=0) as svc:
        big = [{"fn": "is_even", "code": SLOW}] * 30  # ~3 s on 2 workers
        a = (await svc.client.post("/v1/runs", json=big, headers=svc.grader)).json()["id"]
        await anyio.sleep(0.3)
        b = (await svc.client.post("/v1/runs", json=[GOOD] * 2, headers=svc.other)).json()["id"]
        done = await svc.wait_run(b, svc.other, timeout=120)
        assert done["status"] == "done"
        # The order of events decides, not a clock: B is done while A is barely started
        # (behind A, B would be done only after A's 30 samples).
        progress = (await svc.client.get(f"/v1/runs/{a}", headers=svc.grader)).json()
        assert progress["status"] == "running" and progress["done"] <= 15, progress
        await svc.client.delete(f"/v1/runs/{a}", headers=svc.grader)


async def test_per_token_queue_quotas_429(kit):
    async with kit.running(token_queue_runs=2, token_queue_samples=25) as svc:
        slow = [{"fn": "is_even", "code": SLOW}] * 10
        for _ in range(2):
            r = await svc.client.post("/v1/runs", json=slow, headers=svc.grader)
            assert r.status_code == 202
        r = await svc.client.post("/v1/runs", json=slow[:1], headers=svc.grader)
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1
        r = await svc.client.post("/v1/runs", json=slow, headers=svc.other)
        assert r.status_code == 202  # another token has its own quota
        r = await svc.client.post("/v1/runs", json=slow * 2, headers=svc.other)
        assert r.status_code == 429 and "samples" in r.json()["detail"]
        for headers in (svc.grader, svc.other):
            async for line in _own_runs(svc, headers):
                await svc.client.delete(f"/v1/runs/{line}", headers=headers)


async def _own_runs(svc, headers):
    import sqlite3

    token_id = headers["Authorization"].split("_")[1]
    with sqlite3.connect(svc.db) as con:
        rows = con.execute("SELECT id FROM runs WHERE owner = ?", (token_id,)).fetchall()
    for (run_id,) in rows:
        yield run_id


async def test_per_token_grading_rate_limit_429(kit):
    async with kit.running(rate_per_minute=60, rate_burst=3) as svc:
        for _ in range(3):
            assert (await svc.client.post("/v1/grade", json=GOOD, headers=svc.grader)).is_success
        r = await svc.client.post("/v1/grade", json=GOOD, headers=svc.grader)
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 2
        r = await svc.client.post("/v1/runs", json=[GOOD], headers=svc.grader)
        assert r.status_code == 429  # runs draw from the same bucket
        assert (await svc.client.post("/v1/grade", json=GOOD, headers=svc.other)).is_success
        r = await svc.client.post("/v1/runs", json=[GOOD] * 4, headers=svc.other)
        assert r.status_code == 413  # never fits: more than the burst of one task
        other_task = kit.example_samples()[-1]
        assert other_task["fn"] != "is_even"
        r = await svc.client.post("/v1/grade", json=other_task, headers=svc.grader)
        assert r.status_code == 200  # the bucket is per task


def test_rows_in_the_log_are_bounded_json():
    # The infra text a client never sees goes to the log, cut and printable.
    from gradebox.service.rows import public_infra

    row = public_infra({"id": "x", "infra_error": "\x1b[2J" + "A" * 100_000}, "grade")
    assert row["infra_error"] == INFRA_MESSAGE
    json.dumps(row)


def test_a_sample_past_its_budget_has_its_worker_killed_and_replaced() -> None:
    import pickle

    from gradebox.pipeline.tests import FrontJob, FrontResult
    from gradebox.service.engine.front import FrontFailure, FrontPool

    # ~6 s of gating (20 times the longest code the server takes): only a kill ends it sooner.
    stuck = FrontJob("is_even", None, HEAVY["code"] * 20, None, ("os",), False, False)
    good = FrontJob("is_even", None, GOOD["code"], "O(1)", ("os",), False, False)
    pool = FrontPool(1)
    try:
        pool.start()
        t0 = time.perf_counter()
        failed = pool.check(stuck, budget_s=0.1)
        assert isinstance(failed, FrontFailure) and failed.reason == "budget", failed
        assert time.perf_counter() - t0 < 3.0  # the budget, not the ~6 s (or more) of gating
        # The good job's budget decides: were the one worker waited for (6 s of gating or
        # more), not killed and replaced (~0.1 s), this would be a "budget" failure.
        found = pool.check(good, budget_s=3.0)
        assert isinstance(found, FrontResult), found
        assert (found.extraction.contract, found.gate.claim, found.gate.fired) == (
            "ok", "held", False)  # fmt: skip
        assert pickle.loads(pickle.dumps(found)) == found
    finally:
        pool.close()
    assert isinstance(pool.check(good, budget_s=1.0), FrontFailure)  # closed: no result
