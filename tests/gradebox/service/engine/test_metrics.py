"""``GET /metrics``: admin only, Prometheus text, counts per route, stage, lane, verdict;
never a hidden value, an expected value or a token (canaries)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gradebox.service import ServiceConfig, create_app

pytestmark = pytest.mark.anyio

ARG_CANARY = "cnry-arg-4d1f9e"
EXPECT_CANARY = "cnry-expect-b7c203"
TASK = {
    "public": {"fn": "tag", "spec": "Return the tag of s.", "signature": "def tag(s: str) -> str"},
    "hidden": [
        {"fn": "tag", "args": ["a"], "expect": "tag:a"},
        {"fn": "tag", "args": [ARG_CANARY], "expect": EXPECT_CANARY},
    ],
    "disclosure": "cases",
}
GOOD = (
    "def tag(s: str) -> str:\n"
    f"    return {EXPECT_CANARY!r} if s == {ARG_CANARY!r} else 'tag:' + s\n"
)
WRONG = "def tag(s: str) -> str:\n    return s\n"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of an exposition, by name and sorted labels."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(found, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_metrics_need_an_admin_token(kit):
    async with kit.running(register=False) as svc:
        assert (await svc.client.get("/metrics")).status_code == 401
        assert (await svc.client.get("/metrics", headers=svc.grader)).status_code == 403
        r = await svc.client.get("/metrics", headers=svc.admin)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/plain")
        assert "gradebox_http_requests_total" in r.text


async def test_metrics_count_routes_stages_lanes_and_verdicts_without_secrets(
    kit, static_service, caplog
):
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="gradebox")
    async with kit.running(register=False, static=static_service) as svc:
        r = await svc.client.put("/v1/tasks/tag", json=TASK, headers=svc.admin)
        assert r.status_code == 200, r.text
        for code in (GOOD, WRONG):
            r = await svc.client.post(
                "/v1/grade", json={"fn": "tag", "code": code}, headers=svc.grader
            )
            assert r.status_code == 200, r.text
        run = [
            {"fn": "tag", "code": GOOD},
            {"fn": "tag", "code": WRONG},
            {"fn": "tag", "reply": "No code."},
        ]
        r = await svc.client.post("/v1/runs?static=false", json=run, headers=svc.grader)
        run_id = r.json()["id"]
        await svc.wait_run(run_id, svc.grader)
        await svc.client.get(f"/v1/runs/{run_id}/results", headers=svc.grader)
        await svc.client.get(f"/v1/runs/{run_id}", headers=svc.other)  # 404
        await svc.client.get(f"/nowhere/{ARG_CANARY}", headers=svc.admin)
        text = (await svc.client.get("/metrics", headers=svc.admin)).text
    found = samples(text)
    req = "gradebox_http_requests_total"
    assert value(found, req, method="PUT", route="/v1/tasks/{task:path}", status="200") == 1
    assert value(found, req, method="POST", route="/v1/grade", status="200") == 2
    assert value(found, req, method="POST", route="/v1/runs", status="202") == 1
    assert value(found, req, method="GET", route="/v1/runs/{run_id}", status="404") == 1
    assert value(found, req, method="GET", route="unmatched", status="404") == 1
    stage = "gradebox_grade_stage_seconds_count"
    for name in ("front", "tests", "static"):
        assert value(found, stage, stage=name, lane="sync") == 2, name
    assert value(found, stage, stage="tests", lane="batch") == 3
    assert value(found, stage, stage="static", lane="batch") == 0  # the run said static=false
    verdicts = "gradebox_verdicts_total"
    assert value(found, verdicts, lane="sync", verdict="pass") == 1
    assert value(found, verdicts, lane="sync", verdict="fail") == 1
    assert value(found, verdicts, lane="batch", verdict="pass") == 1
    assert value(found, verdicts, lane="batch", verdict="fail") == 2
    assert value(found, "gradebox_queue_depth", lane="batch") == 0
    assert value(found, "gradebox_queue_depth", lane="sync") == 0
    assert ("gradebox_sandbox_busy", (("lane", "sync"),)) in found
    tokens = [h["Authorization"].split()[1] for h in (svc.admin, svc.grader, svc.other)]
    server = [r for r in caplog.records if not r.name.startswith(("httpx", "httpcore"))]
    logs = "\n".join(f"{r.getMessage()} {r.args}" for r in server)  # not the test's client
    assert any(r.name == "gradebox.service" for r in server)
    for secret in (ARG_CANARY, EXPECT_CANARY, *tokens):
        assert secret not in text
        assert secret not in logs


def test_each_app_has_its_own_registry(tmp_path: Path):
    apps = [create_app(ServiceConfig(db=tmp_path / f"{i}.sqlite")) for i in range(3)]
    registries = {id(app.state.service.metrics.registry) for app in apps}
    assert len(registries) == 3
