"""Tenants and the judge: one token's judgements never cost or tell another token anything.

Attacks by a client holding a grader token who has read :mod:`gradebox.service.judging`:

- defer thousands of judgements so that another token's deferred judgement
  waits behind all of them (the deferred queue was first come, first served);
- fill the deferred backlog so that another token's judgements are settled
  ``unavailable`` at once;
- keep the judge busy so that another token's ``wait`` grade blocks;
- submit a guess of another tenant's code and read ``cache_hit`` (or the time a
  hit saves) to learn whether that tenant submitted it (the cache was shared).

Real sandbox, real judge stage and client, a real local OpenAI-compatible
server (``endpoint`` in conftest) that records every request in order.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from gradebox.pipeline.judge import JudgeStage, open_judge_stage

pytestmark = pytest.mark.anyio

TASK = {
    "public": {"fn": "inc", "spec": "Return x plus one.", "signature": "def inc(x: int) -> int"},
    "hidden": [{"fn": "inc", "args": [1], "expect": 2}],
    "disclosure": "cases",
}


def _code(tag: str) -> str:
    """A passing candidate that the endpoint's request log can tell apart by ``tag``."""
    return f"def inc(x: int) -> int:\n    # {tag}\n    return x + 1\n"


def _stage(endpoint, tmp_path: Path, *, concurrency: int = 1, cache: bool = False) -> JudgeStage:
    env = {"GRADEBOX_JUDGE_BASE_URL": endpoint.base_url, "GRADEBOX_JUDGE_MODEL": "judge-model"}
    made = open_judge_stage(
        env,
        rubric_names=["default"],
        no_cache=not cache,
        cache_path=tmp_path / "judge.sqlite" if cache else None,
        concurrency=concurrency,
    )
    assert isinstance(made, JudgeStage)
    return made


@pytest.fixture
def one_at_a_time(endpoint, tmp_path) -> Iterator[JudgeStage]:
    """A judge with one request in flight: the order of requests is the order of turns."""
    made = _stage(endpoint, tmp_path)
    yield made
    made.close()


@pytest.fixture
def cached(endpoint, tmp_path) -> Iterator[JudgeStage]:
    made = _stage(endpoint, tmp_path, concurrency=2, cache=True)
    yield made
    made.close()


async def _grade(svc, headers, code: str, judge: str) -> dict:
    r = await svc.client.post(
        "/v1/grade", json={"fn": "inc", "code": code, "judge": judge}, headers=headers
    )
    assert r.status_code == 200, r.text
    return r.json()


async def _settled(svc, headers, grade_id: str, timeout: float = 60.0) -> dict:
    with anyio.fail_after(timeout):
        while True:
            r = await svc.client.get(f"/v1/grades/{grade_id}", headers=headers)
            assert r.status_code == 200, r.text
            if r.json()["judge"]["status"] != "pending":
                return r.json()
            await anyio.sleep(0.05)


def _position(endpoint, tag: str) -> int:
    """Where the request judging ``tag``'s code is in the endpoint's log."""
    found = [i for i, raw in enumerate(endpoint.raw) if f"# {tag}" in raw]
    assert len(found) == 1, (tag, found)
    return found[0]


async def test_a_flood_of_deferred_judgements_does_not_delay_another_token(
    kit, one_at_a_time, endpoint
):
    endpoint.delay = 0.15
    async with kit.running(judge=one_at_a_time) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        flood = [await _grade(svc, svc.grader, _code(f"flood-{i}"), "defer") for i in range(12)]
        row = await _grade(svc, svc.other, _code("victim"), "defer")
        asked_before = len(endpoint.raw)
        victim = await _settled(svc, svc.other, row["grade_id"])
        assert victim["judge"]["status"] == "scored"
        # Round-robin: the victim's is the next judgement taken (one of the flood may
        # already be taken, another on its way to the endpoint), not the twelfth.
        assert _position(endpoint, "victim") <= asked_before + 2, endpoint.raw
        for f in flood:  # the flood is still judged, only in turns
            assert (await _settled(svc, svc.grader, f["grade_id"]))["judge"]["status"] == "scored"


async def test_a_waiting_grade_goes_before_every_deferred_judgement(kit, one_at_a_time, endpoint):
    endpoint.delay = 0.15
    async with kit.running(judge=one_at_a_time) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        for i in range(8):
            await _grade(svc, svc.grader, _code(f"queued-{i}"), "defer")
        asked_before = len(endpoint.raw)
        row = await _grade(svc, svc.other, _code("waiting"), "wait")
        assert row["judge"]["status"] == "scored"
        assert _position(endpoint, "waiting") <= asked_before + 2, endpoint.raw


async def test_one_token_cannot_fill_the_backlog_for_everyone(kit, one_at_a_time, endpoint):
    endpoint.delay = 0.3
    # A backlog of 8: a quarter of it (2) is one token's share.
    async with kit.running(judge=one_at_a_time, judge_backlog=8) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        flood = [await _grade(svc, svc.grader, _code(f"fill-{i}"), "defer") for i in range(8)]
        row = await _grade(svc, svc.other, _code("victim"), "defer")
        victim = await _settled(svc, svc.other, row["grade_id"])
        assert victim["judge"]["status"] == "scored", victim["judge"]
        statuses = [(await _settled(svc, svc.grader, f["grade_id"]))["judge"] for f in flood]
        assert [j["status"] for j in statuses].count("scored") == 2
        refused = [j for j in statuses if j["status"] == "unavailable"]
        assert len(refused) == 6
        assert all("backlog is full" in j["reason"] for j in refused)
        # The flood's refusals were settled at once: never sent to the endpoint.
        assert sum("# fill-" in raw for raw in endpoint.raw) == 2


async def test_the_judge_cache_tells_one_token_nothing_about_another(kit, cached, endpoint):
    async with kit.running(judge=cached) as svc:
        await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        secret = _code("a tenants own solution")
        asked = lambda: sum("# a tenants own solution" in raw for raw in endpoint.raw)  # noqa: E731
        first = await _grade(svc, svc.grader, secret, "wait")
        again = await _grade(svc, svc.grader, secret, "wait")
        assert (first["judge"]["cache_hit"], again["judge"]["cache_hit"]) == (False, True)
        assert asked() == 1
        # Another token guessing the same code is not answered from the first one's
        # entry: it pays for its own judgement and learns nothing from cache_hit.
        guess = await _grade(svc, svc.other, secret, "wait")
        assert guess["judge"]["cache_hit"] is False
        assert asked() == 2
        assert guess["judge"]["key"] != first["judge"]["key"]
        # Its own entry then serves it, as the first token's serves that one.
        assert (await _grade(svc, svc.other, secret, "wait"))["judge"]["cache_hit"] is True
        assert (await _grade(svc, svc.grader, secret, "wait"))["judge"]["cache_hit"] is True
        assert asked() == 2
