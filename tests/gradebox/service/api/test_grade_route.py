"""``POST /v1/grade`` is served without FastAPI's dependency solver (``WhoStateRoute``).

Its answers must be FastAPI's, byte for byte: each request below goes to the app
as it is and to the same app with the route served by FastAPI's own handler (the
reference), and status, headers and body must match, refusals included. A grade's
row must be the bytes ``GET /v1/grades/{id}`` (served by the solver) gives.
"""

from __future__ import annotations

import json

import pytest
from fastapi.routing import APIRoute

from gradebox.service.api.deps import WhoStateRoute

pytestmark = pytest.mark.anyio

GOOD = {"fn": "is_even", "code": "def is_even(n):\n    return n % 2 == 0\n"}


def _token(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def _requests(svc) -> list[tuple[str, dict[str, str], bytes]]:
    token = _token(svc.grader)
    good = json.dumps(GOOD).encode()
    return [
        ("no token", {}, good),
        ("basic", {"Authorization": "Basic YWRtaW46YWRtaW4="}, good),
        ("scheme only", {"Authorization": "Bearer"}, good),
        ("unknown token", {"Authorization": "Bearer gbx_0000000000000000_" + "A" * 43}, good),
        ("bad secret", {"Authorization": token[:-4] + "AAAA"}, good),
        ("not json", svc.grader, b"{nope"),
        ("duplicate key", svc.grader, b'{"fn": "is_even", "fn": "x", "code": "x"}'),
        ("not an object", svc.grader, b"[1, 2]"),
        ("unknown task", svc.grader, json.dumps({"fn": "nope", "code": "x"}).encode()),
        ("bad layers", svc.grader, json.dumps(GOOD | {"judge": "wait"}).encode()),
        ("lowercase scheme", {"Authorization": "bearer " + token}, b'{"code": 1}'),
        ("admin", svc.admin, json.dumps({"fn": "nope"}).encode()),
    ]


async def _answers(svc) -> list[tuple[str, int, dict[str, str], bytes]]:
    out = []
    for name, headers, body in _requests(svc):
        r = await svc.client.post(
            "/v1/grade", content=body, headers=headers | {"Content-Type": "application/json"}
        )
        kept = {k: v for k, v in r.headers.items() if k != "x-request-id"}
        # Tokens differ between the two apps; bodies never name them.
        out.append((name, r.status_code, kept, r.content))
    return out


async def test_refusals_are_fastapis_byte_for_byte(kit, monkeypatch, tmp_path):
    async with kit.running() as svc:
        lean = await _answers(svc)
    with monkeypatch.context() as m:  # the reference: FastAPI's handler for the same route
        m.setattr(WhoStateRoute, "get_route_handler", APIRoute.get_route_handler)
        reference_kit = type(kit)(kit.sandbox, tmp_path / "reference")
        reference_kit.tmp.mkdir()
        async with reference_kit.running() as svc:
            reference = await _answers(svc)
    assert [a[1] for a in lean] == [401, 401, 401, 401, 401, 422, 422, 422, 422, 422, 422, 422]
    assert lean == reference


async def test_a_grade_is_the_same_bytes_as_reading_it_again(kit):
    async with kit.running() as svc:
        for sample in kit.example_samples()[:3]:
            r = await svc.client.post("/v1/grade", json=sample, headers=svc.grader)
            assert r.status_code == 200, r.text
            assert r.headers["content-type"] == "application/json"
            again = await svc.client.get(f"/v1/grades/{r.json()['grade_id']}", headers=svc.grader)
            assert again.content == r.content


def test_the_route_refuses_an_endpoint_it_cannot_serve():
    async def other(request, state):  # no ``who``: the solver would be needed
        return {}

    with pytest.raises(TypeError, match="request, who, state"):
        WhoStateRoute("/x", other, methods=["POST"])


async def test_a_full_server_refuses_at_once_not_after_a_queue(kit):
    """Checking and grading share one pool: a body is still checked, and refused (429),
    while every grade slot is held, never queued behind the grades holding them."""
    import anyio

    slow = {"fn": "is_even", "code": "import time\ndef is_even(n):\n    time.sleep(1.5)\n"}
    async with kit.running(max_inflight_grades=2, per_token_concurrency=2) as svc:
        results = {}

        async def post(key, headers, sample):
            results[key] = await svc.client.post("/v1/grade", json=sample, headers=headers)

        async with anyio.create_task_group() as tg:
            tg.start_soon(post, "a", svc.grader, slow)
            tg.start_soon(post, "b", svc.grader, slow)
            # Both slots taken (the slow grades hold them for seconds): then a third.
            with anyio.fail_after(60):
                while await _sync_depth(svc) < 2:
                    await anyio.sleep(0.01)
            await post("c", svc.other, GOOD)  # queued behind them, it would pass
        assert results["c"].status_code == 429, results["c"].text
        assert results["c"].json() == {"detail": "too many grades in flight"}
        assert results["a"].status_code == results["b"].status_code == 200


async def _sync_depth(svc) -> float:
    """Grade slots held now (``gradebox_queue_depth{lane="sync"}`` of ``GET /metrics``)."""
    text = (await svc.client.get("/metrics", headers=svc.admin)).text
    [line] = [x for x in text.splitlines() if x.startswith('gradebox_queue_depth{lane="sync"}')]
    return float(line.split()[-1])
