"""The judge through the API: the CLI's judge stage against a real local HTTP server.

The server (``endpoint`` in conftest: stdlib ``http.server`` on 127.0.0.1, real
sockets, the real ``openai`` client) answers ``POST /v1/chat/completions`` with a valid reply
whose verdict the test picks, after a delay the test picks, and records every
request. No mocks.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import anyio
import pytest
from openai_server import Scripted, answer

from gradebox.pipeline.judge import JudgeStage, open_judge_stage

pytestmark = pytest.mark.anyio

CANARY_KEY = "sk-canary-KEY-5f3e9d1c"
SECRET_ARG, SECRET_EXPECT = 91_827_364, 91_827_365
GOOD = "def inc(x: int) -> int:\n    return x + 1\n"
WRONG = "def inc(x: int) -> int:\n    return x + 2\n"
TASK = {
    "public": {"fn": "inc", "spec": "Return x plus one.", "signature": "def inc(x: int) -> int"},
    "hidden": [
        {"fn": "inc", "args": [1], "expect": 2},
        {"fn": "inc", "args": [SECRET_ARG], "expect": SECRET_EXPECT},
    ],
    "disclosure": "cases",
}


@pytest.fixture
def stage(endpoint, tmp_path) -> Iterator[JudgeStage]:
    env = {
        "GRADEBOX_JUDGE_BASE_URL": endpoint.base_url,
        "GRADEBOX_JUDGE_MODEL": "judge-model",
        "GRADEBOX_JUDGE_API_KEY": CANARY_KEY,
    }
    made = open_judge_stage(env, rubric_names=["default"], no_cache=True)
    assert isinstance(made, JudgeStage)
    yield made
    made.close()


async def _grade(svc, code, **layers):
    r = await svc.client.post(
        "/v1/grade", json={"fn": "inc", "code": code, **layers}, headers=svc.grader
    )
    assert r.status_code == 200, r.text
    assert CANARY_KEY not in r.text
    return r.json()


async def _poll(svc, grade_id, timeout=20.0):
    with anyio.fail_after(timeout):
        while True:
            r = await svc.client.get(f"/v1/grades/{grade_id}", headers=svc.grader)
            assert r.status_code == 200, r.text
            assert CANARY_KEY not in r.text
            if r.json()["judge"]["status"] != "pending":
                return r.json()
            await anyio.sleep(0.05)


async def test_wait_annotates_the_row_before_it_returns(kit, stage, endpoint):
    async with kit.running(judge=stage) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        row = await _grade(svc, GOOD, judge="wait")
        judge = row["judge"]
        assert (judge["status"], judge["verdict"], judge["model"]) == (
            "scored",
            "match",
            "judge-model-2024",
        )
        assert (row["verdict"], row["reason"]) == ("pass", "ok")
        # The judge saw spec and code, never a hidden value; the key went only to it.
        assert endpoint.raw and not any(str(SECRET_ARG) in r for r in endpoint.raw)
        assert not any(str(SECRET_EXPECT) in r for r in endpoint.raw)
        assert endpoint.keys and set(endpoint.keys) == {f"Bearer {CANARY_KEY}"}


@pytest.mark.parametrize("mode", ["wait", "defer"])
async def test_a_judge_match_never_makes_a_test_failure_pass(kit, stage, endpoint, mode):
    endpoint.verdict = "match"
    async with kit.running(judge=stage) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        row = await _grade(svc, WRONG, judge=mode)
        if mode == "defer":
            row = await _poll(svc, row["grade_id"])
        assert row["judge"]["status"] == "scored" and row["judge"]["verdict"] == "match"
        assert (row["pass"], row["verdict"], row["reason"]) == (False, "fail", "hidden_tests")


async def test_defer_returns_pending_at_once_and_the_annotation_later(kit, stage, endpoint):
    # The judge answers only once the test lets it (an event, not a delay): a grade that
    # waited for it would come back scored (or timed out), never pending.
    released = threading.Event()

    def held(body):
        released.wait(120)
        return Scripted(200, answer(body, "mismatch"))

    endpoint.responder = held
    async with kit.running(judge=stage) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        try:
            row = await _grade(svc, GOOD, judge="defer")
        finally:
            released.set()
        assert row["judge"]["status"] == "pending" and row["judge"]["verdict"] is None
        assert (row["verdict"], row["reason"]) == ("pass", "ok")  # tests decided so far
        final = await _poll(svc, row["grade_id"])
        assert final["judge"]["status"] == "scored" and final["judge"]["verdict"] == "mismatch"
        # The same verdict function, now with the judge: a pass downgraded, never upgraded.
        assert (final["verdict"], final["reason"]) == ("needs_review", "judge:mismatch")
        assert final["outcomes"] == row["outcomes"] == ["ok", "ok"]


async def test_defer_in_a_run_updates_its_results(kit, stage, endpoint):
    endpoint.delay = 0.3
    async with kit.running(judge=stage) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        samples = [
            {"id": "good", "fn": "inc", "code": GOOD},
            {"id": "bad", "fn": "inc", "code": WRONG},
        ]
        r = await svc.client.post("/v1/runs?judge=defer", json=samples, headers=svc.grader)
        assert r.status_code == 202, r.text
        run_id = r.json()["id"]
        await svc.wait_run(run_id, svc.grader)
        with anyio.fail_after(20):
            while True:
                status = (await svc.client.get(f"/v1/runs/{run_id}", headers=svc.grader)).json()
                if status["judge_pending"] == 0:
                    break
                await anyio.sleep(0.05)
        assert status["layers"] == {"static": False, "judge": "defer"}
        text = (await svc.client.get(f"/v1/runs/{run_id}/results", headers=svc.grader)).text
        assert CANARY_KEY not in text
        rows = {row["id"]: row for row in map(json.loads, text.splitlines())}
        assert {i: r["judge"]["status"] for i, r in rows.items()} == {
            "good": "scored",
            "bad": "scored",
        }
        assert (rows["good"]["verdict"], rows["bad"]["verdict"]) == ("pass", "fail")


async def test_off_and_the_default_leave_judge_null(kit, stage, endpoint):
    async with kit.running(judge=stage) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        assert (await _grade(svc, GOOD))["judge"] is None  # default: serve --judge-default off
        assert (await _grade(svc, GOOD, judge="off"))["judge"] is None
        assert endpoint.raw == []


async def test_a_server_without_a_judge_refuses_one(kit):
    async with kit.running() as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        for mode in ("wait", "defer"):
            r = await svc.client.post(
                "/v1/grade", json={"fn": "inc", "code": GOOD, "judge": mode}, headers=svc.grader
            )
            assert r.status_code == 422 and r.json()["problems"][0]["pointer"] == "/judge"
        r = await svc.client.post(
            "/v1/runs?judge=wait", json=[{"fn": "inc", "code": GOOD}], headers=svc.grader
        )
        assert r.status_code == 422


async def test_another_tokens_grade_is_404(kit, stage):
    async with kit.running(judge=stage) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        row = await _grade(svc, GOOD, judge="defer")
        r = await svc.client.get(f"/v1/grades/{row['grade_id']}", headers=svc.other)
        assert r.status_code == 404
        r = await svc.client.get("/v1/grades/nope", headers=svc.grader)
        assert r.status_code == 404


async def test_a_judgement_lost_at_a_stop_becomes_unavailable(kit, stage, endpoint):
    endpoint.delay = 30.0  # never answers before the app stops
    async with kit.running(judge=stage) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        row = await _grade(svc, GOOD, judge="defer")
        assert row["judge"]["status"] == "pending"
    async with kit.running(register=False) as svc:
        r = await svc.client.get(f"/v1/grades/{row['grade_id']}", headers=svc.admin)
        final = r.json()
        assert final["judge"]["status"] == "unavailable"
        assert (final["verdict"], final["reason"]) == ("pass", "ok")


async def test_metrics_count_judge_calls_and_cache_hits_never_the_key(endpoint, tmp_path, kit):
    env = {
        "GRADEBOX_JUDGE_BASE_URL": endpoint.base_url,
        "GRADEBOX_JUDGE_MODEL": "judge-model",
        "GRADEBOX_JUDGE_API_KEY": CANARY_KEY,
    }
    cached = open_judge_stage(env, rubric_names=["default"], cache_path=tmp_path / "j.sqlite")
    assert isinstance(cached, JudgeStage)
    try:
        async with kit.running(judge=cached) as svc:
            r = await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
            assert r.status_code == 200
            await _grade(svc, GOOD, judge="wait")
            await _grade(svc, GOOD, judge="wait")  # the same request: from the cache
            row = await _grade(svc, WRONG, judge="defer")
            await _poll(svc, row["grade_id"])
            text = (await svc.client.get("/metrics", headers=svc.admin)).text
    finally:
        cached.close()
    assert 'gradebox_judge_calls_total{status="scored"} 3.0' in text
    assert "gradebox_judge_cache_hits_total 1.0" in text
    assert "gradebox_judge_requests_total 2.0" in text
    assert 'gradebox_grade_stage_seconds_count{lane="sync",stage="judge"} 3.0' in text
    for secret in (CANARY_KEY, str(SECRET_ARG), str(SECRET_EXPECT)):
        assert secret not in text


async def test_a_full_judge_backlog_settles_deferred_judgements_as_unavailable(
    kit, stage, endpoint
):
    endpoint.delay = 1.5
    async with kit.running(judge=stage, judge_backlog=1) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        first = await _grade(svc, GOOD, judge="defer")
        second = await _grade(svc, GOOD, judge="defer")  # the first still holds the backlog
        assert first["judge"]["status"] == second["judge"]["status"] == "pending"
        late = await _poll(svc, second["grade_id"], timeout=1.0)  # settled at once
        assert late["judge"]["status"] == "unavailable"
        assert "backlog is full" in late["judge"]["reason"]
        assert (late["verdict"], late["reason"]) == ("pass", "ok")  # the tests decided
        done = await _poll(svc, first["grade_id"])
        assert done["judge"]["status"] == "scored"
        third = await _grade(svc, GOOD, judge="defer")  # room again once it finished
        assert (await _poll(svc, third["grade_id"]))["judge"]["status"] == "scored"
