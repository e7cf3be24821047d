"""Runs: submit, progress, results stream, summary, diff, cancel, queue and size limits."""

from __future__ import annotations

import json

import anyio
import pytest

pytestmark = pytest.mark.anyio

SLOW = "import time\ndef is_even(n):\n    time.sleep(0.3)\n    return n % 2 == 0\n"


async def test_run_json_array_and_jsonl(kit):
    samples = kit.example_samples()
    async with kit.running() as svc:
        r = await svc.client.post("/v1/runs", json=samples, headers=svc.grader)
        assert r.status_code == 202
        first = r.json()
        assert first["status"] == "queued" and first["total"] == len(samples)
        body = "\n".join(json.dumps(s) for s in samples) + "\n\n"
        r = await svc.client.post(
            "/v1/runs", content=body, headers=svc.grader | {"content-type": "application/jsonl"}
        )
        second = r.json()["id"]
        done = await svc.wait_run(first["id"], svc.grader)
        assert done["status"] == "done" and done["done"] == done["total"] and done["progress"] == 1
        assert done["summary"]["samples"] == len(samples)
        await svc.wait_run(second, svc.grader)
        r = await svc.client.get(f"/v1/runs/{first['id']}/results", headers=svc.grader)
        assert r.headers["content-type"].startswith("application/jsonl")
        rows = [json.loads(x) for x in r.text.splitlines()]
        assert [row["id"] for row in rows] == [s["id"] for s in samples]
        r = await svc.client.get(f"/v1/runs/{first['id']}/diff/{second}", headers=svc.grader)
        diff = r.json()
        assert diff["regressed"] is False and diff["counts"]["unchanged"] == len(samples)


async def test_ids_default_to_index_and_must_be_unique(kit):
    async with kit.running() as svc:
        code = "def is_even(n):\n    return True\n"
        r = await svc.client.post(
            "/v1/runs", json=[{"fn": "is_even", "code": code}] * 2, headers=svc.grader
        )
        await svc.wait_run(r.json()["id"], svc.grader)
        rows = (await svc.client.get(f"/v1/runs/{r.json()['id']}/results", headers=svc.grader)).text
        assert [json.loads(x)["id"] for x in rows.splitlines()] == ["0", "1"]
        dup = [{"id": "a", "fn": "is_even", "code": code}] * 2
        r = await svc.client.post("/v1/runs", json=dup, headers=svc.grader)
        assert r.status_code == 422 and r.json()["problems"][0]["pointer"] == "/1/id"


async def test_bad_jsonl_line_is_pointed_at(kit):
    async with kit.running() as svc:
        good = json.dumps(kit.example_samples()[0])
        body = f"{good}\n\n{{oops\n"
        r = await svc.client.post("/v1/runs", content=body, headers=svc.grader)
        assert r.status_code == 422
        problem = r.json()["problems"][0]
        assert problem["pointer"] == "/1" and problem["line"] == 3
        body = f'{good}\n{{"fn": "nope", "code": "x"}}\n'
        r = await svc.client.post("/v1/runs", content=body, headers=svc.grader)
        assert r.json()["problems"][0]["pointer"] == "/1/fn"


async def test_cancel(kit):
    async with kit.running() as svc:
        samples = [{"fn": "is_even", "code": SLOW}] * 20
        r = await svc.client.post("/v1/runs", json=samples, headers=svc.grader)
        run = r.json()["id"]
        await anyio.sleep(0.2)
        r = await svc.client.delete(f"/v1/runs/{run}", headers=svc.grader)
        assert r.status_code == 200 and r.json()["status"] == "cancelled"
        await anyio.sleep(0.8)  # samples in flight finish; nothing new starts
        info = (await svc.client.get(f"/v1/runs/{run}", headers=svc.grader)).json()
        assert info["status"] == "cancelled" and info["done"] < 20
        assert (await svc.client.delete(f"/v1/runs/{run}", headers=svc.grader)).status_code == 409


async def test_queue_full_429(kit):
    async with kit.running(queue_size=2) as svc:
        samples = [{"fn": "is_even", "code": SLOW}] * 10
        runs = []
        for _ in range(2):
            r = await svc.client.post("/v1/runs", json=samples, headers=svc.grader)
            assert r.status_code == 202
            runs.append(r.json()["id"])
        r = await svc.client.post("/v1/runs", json=samples, headers=svc.other)
        assert r.status_code == 429 and r.headers["retry-after"] == "10"
        for run in runs:
            await svc.client.delete(f"/v1/runs/{run}", headers=svc.grader)
        r = await svc.client.post("/v1/runs", json=samples[:1], headers=svc.other)
        assert r.status_code == 202


async def test_size_limits_413(kit):
    async with kit.running(max_samples_per_run=3, max_body_bytes=4096) as svc:
        sample = kit.example_samples()[0]
        r = await svc.client.post("/v1/runs", json=[sample] * 4, headers=svc.grader)
        assert r.status_code == 413
        big = {"fn": "is_even", "code": "#" * 5000}
        for path in ("/v1/grade", "/v1/runs", "/v1/tasks/is_even"):
            headers = svc.admin if "tasks" in path else svc.grader
            r = await svc.client.request(
                "PUT" if "tasks" in path else "POST", path, json=big, headers=headers
            )
            assert r.status_code == 413, path

        async def chunks():  # no Content-Length: counted while reading
            for _ in range(10):
                yield b" " * 1000

        r = await svc.client.post("/v1/grade", content=chunks(), headers=svc.grader)
        assert r.status_code == 413
