"""POST /v1/grade: rows, hidden values never in a reply, limits, deadline, readiness."""

from __future__ import annotations

import json

import anyio
import pytest

pytestmark = pytest.mark.anyio

SECRET_ARG = "SECRET-ARG-7f3a"
SECRET_EXPECT = "SECRET-EXPECT-91bc"
ECHO_TASK = {
    "public": {"spec": "Return s unchanged."},
    "hidden": [
        {"args": [SECRET_ARG], "expect": SECRET_EXPECT, "name": "SECRET-NAME-c0de"},
        {"args": [], "kwargs": {"s": SECRET_ARG}, "error": "ValueError"},
    ],
}
# Candidates that try to get the hidden values into the reply.
LEAKY = [
    "def echo(s):\n    raise ValueError(s)\n",
    "def echo(s):\n    print(s)\n    return s + '!'\n",
    "def echo(s):\n    import sys\n    sys.stderr.write(s)\n    raise SyntaxError(s)\n",
    "def echo(s):\n    return {'leak': s, 'x': [s] * 3}\n",
]


async def test_grade_examples(kit):
    async with kit.running() as svc:
        for sample in kit.example_samples():
            r = await svc.client.post("/v1/grade", json=sample, headers=svc.grader)
            assert r.status_code == 200, r.text
            row = r.json()
            assert row["id"] == sample["id"] and row["fn"] == sample["fn"]
            assert row["verdict"] in ("pass", "fail", "needs_review")
            assert row["static"] is None and row["judge"] is None
        good = kit.example_samples()[0]
        r = await svc.client.post("/v1/grade", json=good, headers=svc.admin)
        assert r.json()["verdict"] == "pass"


async def test_no_hidden_value_in_any_reply(kit):
    async with kit.running() as svc:
        r = await svc.client.put("/v1/tasks/echo", json=ECHO_TASK, headers=svc.admin)
        assert r.status_code == 200
        texts = [r.text]
        for code in LEAKY:
            r = await svc.client.post(
                "/v1/grade", json={"fn": "echo", "code": code}, headers=svc.grader
            )
            assert r.status_code == 200
            assert r.json()["verdict"] == "fail"
            texts.append(r.text)
        r = await svc.client.post(
            "/v1/runs", json=[{"fn": "echo", "code": c} for c in LEAKY], headers=svc.grader
        )
        run = r.json()["id"]
        texts.append(json.dumps(await svc.wait_run(run, svc.grader)))
        texts.append((await svc.client.get(f"/v1/runs/{run}/results", headers=svc.admin)).text)
        texts.append((await svc.client.get("/v1/tasks/echo", headers=svc.admin)).text)
        for text in texts:
            assert "SECRET" not in text, text


async def test_sample_problems_point_at_fields(kit):
    async with kit.running() as svc:
        cases = [
            ({"fn": "nope", "code": "x"}, "/fn"),
            ({"fn": "is_even"}, ""),
            ({"fn": "is_even", "code": 3}, "/code"),
            ({"fn": "is_even", "code": "x", "extra": 1}, ""),
            ([], ""),
        ]
        for body, pointer in cases:
            r = await svc.client.post("/v1/grade", json=body, headers=svc.grader)
            assert r.status_code == 422, (body, r.text)
            assert r.json()["problems"][0]["pointer"] == pointer, (body, r.json())


async def test_per_token_concurrency_429(kit):
    slow = {"fn": "is_even", "code": "import time\ndef is_even(n):\n    time.sleep(0.6)\n"}
    async with kit.running(per_token_concurrency=1) as svc:
        results = {}

        async def post(key, headers):
            results[key] = await svc.client.post("/v1/grade", json=slow, headers=headers)

        async with anyio.create_task_group() as tg:
            tg.start_soon(post, "a", svc.grader)
            await anyio.sleep(0.1)
            tg.start_soon(post, "b", svc.grader)  # same token: refused
            tg.start_soon(post, "c", svc.other)  # another token: its own slot
        assert results["a"].status_code == 200
        assert results["b"].status_code == 429
        assert results["b"].headers["retry-after"] == "1"
        assert results["c"].status_code == 200


async def test_deadline_504(kit):
    slow = {"fn": "is_even", "code": "import time\ndef is_even(n):\n    time.sleep(1.5)\n"}
    async with kit.running(grade_deadline_s=0.3) as svc:
        r = await svc.client.post("/v1/grade", json=slow, headers=svc.grader)
        assert r.status_code == 504
        assert r.json() == {"detail": "grading did not finish within the deadline"}


async def test_not_ready_fails_closed(kit):
    # A sandbox that cannot start: the service answers, but is never ready and grades nothing.
    async with kit.running_without_sandbox(sandbox_python="/nonexistent/python3") as svc:
        assert (await svc.client.get("/healthz")).status_code == 200
        for _ in range(10):
            r = await svc.client.get("/readyz")
            assert r.status_code == 503 and r.json() == {"ready": False}
            await anyio.sleep(0.1)
        sample = kit.example_samples()[0]
        r = await svc.client.post("/v1/grade", json=sample, headers=svc.grader)
        assert r.status_code == 503
        r = await svc.client.post("/v1/runs", json=[sample], headers=svc.grader)
        assert r.status_code == 503


async def test_ready_with_sandbox(kit):
    async with kit.running(register=False) as svc:
        r = await svc.client.get("/readyz")
        assert r.status_code == 200 and r.json() == {"ready": True, "isolation": "bwrap"}
