"""A revoked token's deferred judgements are dropped, not made; another token's are made.

The judge is conftest's local OpenAI-compatible endpoint, slowed down so that a
run's deferred judgements queue up; the run's token is revoked through the admin
API once every row is stored (``judge.status: "pending"``). The judgements still
queued then never reach the endpoint, their rows settle as ``unavailable`` with
the verdict the tests decided, and another token's deferred judgement is still made.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest

from gradebox.pipeline.judge import JudgeStage, open_judge_stage
from gradebox.service.engine.judging import UNWANTED

pytestmark = pytest.mark.anyio

N = 16
TASK = {
    "public": {"fn": "inc", "spec": "Return x plus one.", "signature": "def inc(x: int) -> int"},
    "hidden": [{"fn": "inc", "args": [1], "expect": 2}],
    "disclosure": "cases",
}


def code(who: str, i: int) -> str:
    """Distinct code per sample (the reply cache never answers), marked with its token."""
    return f"def inc(x: int) -> int:\n    return x + 1  # <{who}-{i}>\n"


@pytest.fixture
def stage(endpoint, tmp_path) -> Iterator[JudgeStage]:
    env = {"GRADEBOX_JUDGE_BASE_URL": endpoint.base_url, "GRADEBOX_JUDGE_MODEL": "m"}
    made = open_judge_stage(
        env, rubric_names=["default"], cache_path=tmp_path / "judge.sqlite", concurrency=2
    )
    assert isinstance(made, JudgeStage)
    yield made
    made.close()


async def rows(svc, run_id) -> list[dict]:
    text = (await svc.client.get(f"/v1/runs/{run_id}/results", headers=svc.admin)).text
    return [json.loads(x) for x in text.splitlines()]


async def test_a_revoked_tokens_queued_judgements_are_not_made(kit, stage, endpoint):
    async with kit.running(register=False, judge=stage) as svc:
        assert (await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)).is_success
        endpoint.delay = 0.5  # two at a time: the run's judgements wait in line
        samples = [{"id": str(i), "fn": "inc", "code": code("revoked", i)} for i in range(N)]
        r = await svc.client.post("/v1/runs?judge=defer", json=samples, headers=svc.grader)
        run_id = r.json()["id"]
        with anyio.fail_after(60):  # every row stored, its judgement pending or made
            while (await svc.client.get(f"/v1/runs/{run_id}", headers=svc.admin)).json()[
                "status"
            ] != "done":
                await anyio.sleep(0.02)
        token_id = svc.grader["Authorization"].split("_")[1]
        assert (await svc.client.delete(f"/v1/tokens/{token_id}", headers=svc.admin)).is_success
        # Another token's deferred judgement, asked after the revoke, is made.
        body = {"fn": "inc", "code": code("other", 0), "judge": "defer"}
        grade_id = (await svc.client.post("/v1/grade", json=body, headers=svc.other)).json()[
            "grade_id"
        ]
        with anyio.fail_after(60):
            while any(x["judge"]["status"] == "pending" for x in await rows(svc, run_id)):
                await anyio.sleep(0.05)
        with anyio.fail_after(60):
            while (
                other := (await svc.client.get(f"/v1/grades/{grade_id}", headers=svc.other)).json()
            )["judge"]["status"] == "pending":
                await anyio.sleep(0.05)
        assert other["judge"]["status"] == "scored"
        settled = await rows(svc, run_id)
        dropped = [x for x in settled if x["judge"]["reason"] == UNWANTED]
        made = [x for x in settled if x["judge"]["status"] == "scored"]
        assert len(dropped) + len(made) == N and dropped, [x["judge"] for x in settled]
        assert all(x["judge"]["status"] == "unavailable" for x in dropped)
        assert {x["verdict"] for x in settled} == {"pass"}  # the tests decided; nothing else
        # Judgements at the endpoint when the token was revoked finished, and their answers
        # were dropped too; the others never reached it.
        asked = "".join(raw for raw in endpoint.raw if "<revoked-" in raw)
        seen = {x["id"] for x in settled if f"<revoked-{x['id']}>" in asked}
        assert {x["id"] for x in made} <= seen
        assert len(seen) <= len(made) + 2  # + those in flight (the stage's concurrency)
        assert len(seen) < N
        assert asked.count("<revoked-") == len(seen)  # each asked once
