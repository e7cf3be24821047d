"""PUT /v1/tasks/{fn}: the files' schemas, precise pointers, write-only hidden cases, limits."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.anyio

SECRET = "SECRET-VALUE-5e1f"
GOOD_CASE = {"args": [1], "expect": 2}

# (body, status, pointer of the first problem)
BAD_TASKS = [
    ({"hidden": []}, 422, "/hidden"),
    ({}, 422, "/hidden"),
    ({"hidden": [GOOD_CASE], "extra": 1}, 422, "/extra"),
    ({"hidden": [GOOD_CASE, {"args": SECRET, "expect": 1}]}, 422, "/hidden/1/args"),
    ({"hidden": [{"args": [1]}]}, 422, "/hidden/0"),
    ({"hidden": [{"args": [1], "expect": 1, "error": "ValueError"}]}, 422, "/hidden/0"),
    ({"hidden": [{"args": [1], "error": SECRET}]}, 422, "/hidden/0/error"),
    ({"hidden": [{"args": [1], "error": "NotAnError"}]}, 422, "/hidden/0/error"),
    ({"hidden": [{"args": [1, {"$set": SECRET}], "expect": 1}]}, 422, "/hidden/0/args/1"),
    ({"hidden": [{"args": [{"$nope": SECRET}], "expect": 1}]}, 422, "/hidden/0/args/0"),
    (
        {"hidden": [{"args": [1], "expect": {"$tuple": [1, {"$bytes": "!!"}]}}]},
        422,
        "/hidden/0/expect/$tuple/1",
    ),
    ({"hidden": [{"fn": "other", "args": [1], "expect": 1}]}, 422, "/hidden/0/fn"),
    ({"hidden": [{"args": [1], "expect": 1, "tol": -1}]}, 422, "/hidden/0/tol"),
    ({"hidden": [{"args": [1], "kwargs": {"1x": SECRET}, "expect": 1}]}, 422, "/hidden/0/kwargs"),
    (
        {"hidden": [GOOD_CASE], "public": {"examples": [{"args": 1, "expect": 1}]}},
        422,
        "/public/examples/0/args",
    ),
    (
        {"hidden": [GOOD_CASE], "public": {"examples": [{"args": [{"$set": 1}], "expect": 1}]}},
        422,
        "/public/examples/0/args/0",
    ),
    ({"hidden": [GOOD_CASE], "public": {"task": "other"}}, 422, "/public/task"),
    ({"hidden": [GOOD_CASE], "public": {"fn": "1x"}}, 422, "/public/fn"),
    ({"hidden": [GOOD_CASE], "public": []}, 422, "/public"),
    (
        {"hidden": [GOOD_CASE], "public": {"static": {"allow_rules": ["B324"]}}},
        422,
        "/public/static",
    ),
    ({"hidden": [GOOD_CASE], "limits": {"memory_mb": 10**6}}, 422, "/limits/memory_mb"),
    ({"hidden": [GOOD_CASE], "limits": {"case_timeout_s": "1"}}, 422, "/limits/case_timeout_s"),
    ({"hidden": [GOOD_CASE], "limits": {"cpu": 1}}, 422, "/limits/cpu"),
    ({"hidden": [GOOD_CASE], "disclosure": "everything"}, 422, "/disclosure"),
    ([GOOD_CASE], 422, ""),
]


@pytest.mark.parametrize(("body", "status", "pointer"), BAD_TASKS)
async def test_bad_task_bodies(kit, body, status, pointer):
    async with kit.running(register=False) as svc:
        r = await svc.client.put("/v1/tasks/inc", json=body, headers=svc.admin)
        assert r.status_code == status, r.text
        assert r.json()["problems"][0]["pointer"] == pointer, r.json()
        assert SECRET not in r.text
        assert (await svc.client.get("/v1/tasks/inc", headers=svc.admin)).status_code == 404


async def test_bad_task_name(kit):
    async with kit.running(register=False) as svc:
        # Any text is a task id, but one that is not a Python name needs its entry point.
        for task in ["class", "1abc", "a-b", "é"]:
            r = await svc.client.put(
                f"/v1/tasks/{task}", json={"hidden": [GOOD_CASE]}, headers=svc.admin
            )
            assert r.status_code == 422
            assert r.json()["problems"][0] == {
                "in": "body",
                "pointer": "/public/fn",
                "message": "the entry point is required: the task id is not a Python name",
            }
        r = await svc.client.put(
            "/v1/tasks/" + "t" * 201, json={"hidden": [GOOD_CASE]}, headers=svc.admin
        )
        assert r.status_code == 422
        assert r.json()["problems"][0] == {
            "in": "path",
            "pointer": "task",
            "message": "must be 1 to 200 characters",
        }


async def test_hidden_cases_are_write_only(kit):
    async with kit.running(register=False) as svc:
        body = {
            "public": {"spec": "Add one.", "signature": "def inc(x: int) -> int"},
            "hidden": [{"args": [SECRET], "expect": SECRET, "name": SECRET}, GOOD_CASE],
            "limits": {"case_timeout_s": 1.0},
        }
        r = await svc.client.put("/v1/tasks/inc", json=body, headers=svc.admin)
        assert r.status_code == 200
        assert r.json() == {"task": "inc", "fn": "inc", "revision": 1, "cases": 2}
        r = await svc.client.get("/v1/tasks/inc", headers=svc.admin)
        info = r.json()
        assert info["cases"] == 2 and info["public"]["spec"] == "Add one."
        assert info["limits"] == {"case_timeout_s": 1.0}
        assert info["disclosure"] == "counts"  # the default
        assert SECRET not in r.text
        body = {"hidden": [GOOD_CASE], "disclosure": "cases"}
        r = await svc.client.put("/v1/tasks/inc", json=body, headers=svc.admin)
        assert r.json()["revision"] == 2
        # The new revision grades: inc(1) == 2.
        r = await svc.client.post(
            "/v1/grade",
            json={"fn": "inc", "code": "def inc(x):\n    return x + 1\n"},
            headers=svc.grader,
        )
        assert r.json()["verdict"] == "pass" and r.json()["outcomes"] == ["ok"]


async def test_too_many_cases_413(kit):
    async with kit.running(register=False, max_cases_per_task=3) as svc:
        r = await svc.client.put(
            "/v1/tasks/inc", json={"hidden": [GOOD_CASE] * 4}, headers=svc.admin
        )
        assert r.status_code == 413
        r = await svc.client.put(
            "/v1/tasks/inc", json={"hidden": [GOOD_CASE] * 3}, headers=svc.admin
        )
        assert r.status_code == 200


async def test_task_limits_apply(kit):
    async with kit.running(register=False) as svc:
        body = {
            "hidden": [{"args": [1], "expect": 1}],
            "limits": {"case_timeout_s": 0.2},
            "disclosure": "cases",
        }
        await svc.client.put("/v1/tasks/f", json=body, headers=svc.admin)
        code = "import time\ndef f(x):\n    time.sleep(0.5)\n    return x\n"
        r = await svc.client.post("/v1/grade", json={"fn": "f", "code": code}, headers=svc.grader)
        assert r.json()["outcomes"] == ["timeout"]
