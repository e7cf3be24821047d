"""A run keeps the rubric it was submitted with; synchronous grades use the current one.

The judge is conftest's local OpenAI-compatible endpoint (real sockets, the real
openai client): what it received shows which rubric text judged each sample. The
rubric is replaced while a run of slow candidates is being graded, and, in a
second test, while the server is down between two starts (the pinned texts live
in the database, not only in the first process's snapshot files).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest

from gradebox.pipeline.judge import JudgeStage, open_judge_stage
from gradebox.service import Store
from gradebox.service.engine.rubricdata import RubricFiles

pytestmark = pytest.mark.anyio

SLOW = "import time\n\n\ndef inc(x: int) -> int:\n    time.sleep(0.15)\n    return x + 1\n"


def slow(i: int) -> str:
    """A slow candidate of its own (distinct code: the judge's reply cache never answers)."""
    return SLOW + f"\n\n# sample {i}\n"


def rubric(version: str, criterion: str, name: str = "team") -> str:
    return (
        f'name = "{name}"\nversion = "{version}"\ntitle = "Team conventions"\nverdict = true\n'
        '[scale]\nmin = 1\nmax = 5\n[scale.labels]\n1 = "Poor."\n5 = "Exemplary."\n'
        f'[[criteria]]\nid = "{criterion}"\nname = "{criterion.lower()}-naming"\nweight = 1\n'
        'what = "Checks that names say what they hold."\nwhy = "Reviewers read names first."\n'
        'example = "x = 1"\nuse_instead = "count = 1"\n'
    )


def task(rubric_name: str = "team") -> dict:
    return {
        "public": {
            "fn": "inc",
            "spec": "Return x plus one.",
            "signature": "def inc(x: int) -> int",
            "rubric": rubric_name,
        },
        "hidden": [{"fn": "inc", "args": [1], "expect": 2}],
        "disclosure": "cases",
    }


@pytest.fixture
def stage(endpoint, tmp_path) -> Iterator[JudgeStage]:
    env = {"GRADEBOX_JUDGE_BASE_URL": endpoint.base_url, "GRADEBOX_JUDGE_MODEL": "m"}
    made = open_judge_stage(env, rubric_names=["default"], cache_path=tmp_path / "judge.sqlite")
    assert isinstance(made, JudgeStage)
    yield made
    made.close()


async def put_rubric(svc, text: str, name: str = "team") -> int:
    r = await svc.client.put(
        f"/v1/rubrics/{name}",
        content=text.encode(),
        headers={**svc.admin, "content-type": "application/toml"},
    )
    assert r.status_code == 200, r.text
    return int(r.json()["revision"])


def criteria(endpoint, since: int = 0) -> list[list[str]]:
    """The criterion ids of the score schema of each judgement of a sample requested.

    (The judge's probe of the endpoint, before its first judgement, judges no sample.)
    """
    found = []
    for raw in judged(endpoint, since):
        schema = json.loads(raw)["response_format"]["json_schema"]["schema"]
        found.append(sorted(schema["properties"]["scores"]["properties"]))
    return found


def judged(endpoint, since: int = 0) -> list[str]:
    return [raw for raw in endpoint.raw[since:] if "# sample " in raw]


async def results(svc, run_id, headers) -> list[dict]:
    text = (await svc.client.get(f"/v1/runs/{run_id}/results", headers=headers)).text
    return [json.loads(x) for x in text.splitlines()]


async def wait_done_at_least(svc, run_id, headers, n: int) -> None:
    with anyio.fail_after(60):
        while (await svc.client.get(f"/v1/runs/{run_id}", headers=headers)).json()["done"] < n:
            await anyio.sleep(0.02)


@pytest.mark.parametrize("mode", ["wait", "defer"])
async def test_a_rubric_replaced_mid_run_leaves_the_run_on_the_old_one(kit, stage, endpoint, mode):
    async with kit.running(register=False, judge=stage) as svc:
        assert await put_rubric(svc, rubric("1.0.0", "TMA001")) == 1
        assert (await svc.client.put("/v1/tasks/inc", json=task(), headers=svc.admin)).is_success
        samples = [{"id": str(i), "fn": "inc", "code": slow(i)} for i in range(8)]
        seen = len(endpoint.raw)
        r = await svc.client.post(f"/v1/runs?judge={mode}", json=samples, headers=svc.grader)
        run_id = r.json()["id"]
        await wait_done_at_least(svc, run_id, svc.grader, 1)
        assert await put_rubric(svc, rubric("2.0.0", "TMA002")) == 2
        await svc.wait_run(run_id, svc.grader)
        with anyio.fail_after(30):  # deferred judgements finish after the run's rows
            while any(
                x["judge"]["status"] == "pending" for x in await results(svc, run_id, svc.grader)
            ):
                await anyio.sleep(0.05)
        rows = await results(svc, run_id, svc.grader)
        assert len(rows) == 8
        for row in rows:
            assert row["judge"]["status"] == "scored", row["judge"]
            assert (row["judge"]["rubric"], list(row["judge"]["scores"])) == (
                "team@1.0.0",
                ["TMA001"],
            )
            assert (row["rubric_revision"], row["task_revision"]) == (1, 1)
        # Every request the endpoint got for the run carried the old rubric's schema and text.
        assert criteria(endpoint, seen) == [["TMA001"]] * 8
        assert all("tma001-naming" in raw and "tma002" not in raw for raw in judged(endpoint, seen))
        # A synchronous grade now uses the new rubric.
        body = {"fn": "inc", "code": slow(100), "judge": "wait"}
        row = (await svc.client.post("/v1/grade", json=body, headers=svc.grader)).json()
        assert (row["judge"]["rubric"], list(row["judge"]["scores"])) == ("team@2.0.0", ["TMA002"])
        assert criteria(endpoint, seen) == [["TMA001"]] * 8 + [["TMA002"]]
        # A run submitted now is pinned to revision 2.
        r = await svc.client.post("/v1/runs?judge=wait", json=samples[:1], headers=svc.grader)
        await svc.wait_run(r.json()["id"], svc.grader)
        [row] = await results(svc, r.json()["id"], svc.grader)
        assert (row["rubric_revision"], row["judge"]["rubric"]) == (2, "team@2.0.0")


async def test_an_included_rubric_replaced_mid_run_is_pinned_too(kit, stage, endpoint):
    async with kit.running(register=False, judge=stage) as svc:
        await put_rubric(svc, rubric("1.0.0", "BAS001", name="base"), name="base")
        team = rubric("1.0.0", "TMA001").replace(
            "verdict = true\n", 'verdict = true\ninclude = ["base"]\n'
        )
        await put_rubric(svc, team)
        assert (await svc.client.put("/v1/tasks/inc", json=task(), headers=svc.admin)).is_success
        samples = [{"id": str(i), "fn": "inc", "code": slow(i)} for i in range(6)]
        seen = len(endpoint.raw)
        r = await svc.client.post("/v1/runs?judge=wait", json=samples, headers=svc.grader)
        run_id = r.json()["id"]
        await wait_done_at_least(svc, run_id, svc.grader, 1)
        await put_rubric(svc, rubric("2.0.0", "BAS002", name="base"), name="base")
        await svc.wait_run(run_id, svc.grader)
        assert criteria(endpoint, seen) == [["BAS001", "TMA001"]] * 6
        rows = await results(svc, run_id, svc.grader)
        assert {row["rubric_revision"] for row in rows} == {1}  # team's revision: unchanged


async def test_the_pin_survives_a_restart(kit, stage, endpoint):
    async with kit.running(register=False, judge=stage, shutdown_grace_s=30) as svc:
        await put_rubric(svc, rubric("1.0.0", "TMA001"))
        assert (await svc.client.put("/v1/tasks/inc", json=task(), headers=svc.admin)).is_success
        samples = [{"id": str(i), "fn": "inc", "code": slow(i)} for i in range(12)]
        r = await svc.client.post("/v1/runs?judge=wait", json=samples, headers=svc.grader)
        run_id = r.json()["id"]
        await wait_done_at_least(svc, run_id, svc.grader, 1)
        grader = svc.grader
    # Stopped mid-run (in-flight samples finished); replaced while the server is down,
    # through the same code the API uses.
    store = Store(kit.tmp / "svc.sqlite")
    files = RubricFiles(store)
    try:
        stored, _ = files.put("team", rubric("2.0.0", "TMA002").encode())
        assert stored.revision == 2
        left = len(store.pending(run_id))
    finally:
        files.close()
        store.close()
    assert left > 0, "the run finished before the stop: nothing left to resume"
    seen = len(endpoint.raw)
    async with kit.running(register=False, judge=stage) as svc:
        await svc.wait_run(run_id, svc.admin)
        rows = await results(svc, run_id, svc.admin)
        assert len(rows) == 12
        assert {(x["rubric_revision"], x["judge"]["rubric"]) for x in rows} == {(1, "team@1.0.0")}
        assert criteria(endpoint, seen) == [["TMA001"]] * left
    assert grader  # (the first start's tokens; the second start made its own)


async def test_a_run_with_the_judge_off_pins_nothing_and_a_sample_cannot_choose(kit, stage):
    async with kit.running(register=False, judge=stage) as svc:
        await put_rubric(svc, rubric("1.0.0", "TMA001"))
        assert (await svc.client.put("/v1/tasks/inc", json=task(), headers=svc.admin)).is_success
        r = await svc.client.post(
            "/v1/runs?judge=off", json=[{"fn": "inc", "code": SLOW}], headers=svc.grader
        )
        await svc.wait_run(r.json()["id"], svc.grader)
        [row] = await results(svc, r.json()["id"], svc.grader)
        assert "rubric_revision" not in row and row["judge"] is None
        # A client cannot name its own rubric or revision: the sample schema refuses both.
        for extra in ({"rubric": "default"}, {"rubric_revision": 0}):
            bad = [{"fn": "inc", "code": SLOW, **extra}]
            r = await svc.client.post("/v1/runs?judge=wait", json=bad, headers=svc.grader)
            assert r.status_code == 422, r.text
