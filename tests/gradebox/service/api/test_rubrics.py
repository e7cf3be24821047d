"""Rubrics as data: PUT/GET /v1/rubrics/{name}, checked as files are, used by the judge.

The judge runs against the local OpenAI-compatible endpoint of conftest (real
sockets, the real openai client): the prompt it receives shows which rubric text
was used.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from gradebox.pipeline.judge import JudgeStage, open_judge_stage

pytestmark = pytest.mark.anyio

GOOD = "def inc(x: int) -> int:\n    return x + 1\n"


def rubric(name: str = "team", version: str = "1.0.0", criterion: str = "TMA001", **extra):
    weight = extra.get("weight", 1)
    lines = [
        f'name = "{name}"',
        f'version = "{version}"',
        'title = "Team conventions"',
        "verdict = true",
        *extra.get("head", []),
        "[scale]",
        f"min = {extra.get('min', 1)}",
        "max = 5",
        "[scale.labels]",
        '1 = "Poor."',
        '5 = "Exemplary."',
        "[[criteria]]",
        f'id = "{criterion}"',
        f'name = "{criterion.lower()}-naming"',
        f"weight = {weight}",
        'what = "Checks that names say what they hold."',
        'why = "Reviewers read names first."',
        'example = "x = 1"',
        'use_instead = "count = 1"',
    ]
    return "\n".join(lines) + "\n"


TASK = {
    "public": {
        "fn": "inc",
        "spec": "Return x plus one.",
        "signature": "def inc(x: int) -> int",
        "rubric": "team",
    },
    "hidden": [{"fn": "inc", "args": [1], "expect": 2}],
    "disclosure": "cases",
}


async def put(svc, name, text, headers=None):
    return await svc.client.put(
        f"/v1/rubrics/{name}",
        content=text.encode(),
        headers={**(headers or svc.admin), "content-type": "application/toml"},
    )


async def test_a_rubric_is_stored_and_read_back(kit):
    async with kit.running(register=False) as svc:
        r = await put(svc, "team", rubric())
        assert r.status_code == 200, r.text
        assert (r.json()["revision"], r.json()["criteria"]) == (1, ["TMA001"])
        got = (await svc.client.get("/v1/rubrics/team", headers=svc.admin)).json()
        assert got["toml"] == rubric() and got["builtin"] is False and got["version"] == "1.0.0"
        r = await put(svc, "team", rubric(version="1.1.0"))
        assert r.json()["revision"] == 2
        builtin = (await svc.client.get("/v1/rubrics/quality", headers=svc.admin)).json()
        assert builtin["builtin"] is True and "QLT001" in builtin["criteria"]
        assert (await svc.client.get("/v1/rubrics/nope", headers=svc.admin)).status_code == 404


async def test_rubrics_are_admin_only(kit):
    async with kit.running(register=False) as svc:
        assert (await put(svc, "team", rubric(), svc.grader)).status_code == 403
        assert (await svc.client.get("/v1/rubrics/default", headers=svc.grader)).status_code == 403


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (rubric(weight=-1), "team.toml: TMA001: weight: -1 is less than"),  # the schema
        (rubric(min=5), "team.toml: scale: min (5) must be below max (5)"),  # semantic
        (rubric(head=['include = ["nosuch"]']), "team.toml: include: 'nosuch': no file"),
        (rubric(head=['prompt = "mine"']), "team.toml: prompt: 'mine': no template"),
        (rubric(name="other"), "must equal the rubric name in the path"),
        ("name = ", "team.toml: invalid TOML"),
        ("x = " + "[" * 50_000 + "]" * 50_000, "team.toml: nested too deeply"),
    ],
    ids=["schema", "scale", "include", "prompt", "name", "toml", "deep"],
)
async def test_a_bad_rubric_gets_the_files_problems_and_no_server_path(kit, text, expected):
    async with kit.running(register=False) as svc:
        r = await put(svc, "team", text)
        assert r.status_code == 422, r.text
        messages = [p["message"] for p in r.json()["problems"]]
        assert any(expected in m for m in messages), messages
        assert "gradebox-rubrics-" not in r.text and "/tmp" not in r.text
        assert (await svc.client.get("/v1/rubrics/team", headers=svc.admin)).status_code == 404


async def test_duplicate_ids_across_an_include_are_refused(kit):
    async with kit.running(register=False) as svc:
        assert (await put(svc, "base", rubric("base", criterion="TMA001"))).status_code == 200
        text = rubric(head=['include = ["base"]'])
        r = await put(svc, "team", text)
        assert r.status_code == 422
        assert "duplicate id" in r.json()["problems"][0]["message"]
        # Including a built-in rubric is fine.
        r = await put(svc, "team", rubric(head=['include = ["intent"]'], criterion="TMA009"))
        assert r.status_code == 200, r.text
        assert "INT001" in r.json()["criteria"] and "TMA009" in r.json()["criteria"]


@pytest.mark.parametrize("name", ["default", "intent", "quality", "Bad", "../x", "a" * 65])
async def test_built_in_and_bad_names_are_refused(kit, name):
    async with kit.running(register=False) as svc:
        r = await put(svc, name, rubric(name=name))
        assert r.status_code in (404, 405, 409, 422), r.text
        assert r.status_code != 200


async def test_a_task_must_name_a_known_rubric(kit):
    async with kit.running(register=False) as svc:
        r = await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        assert r.status_code == 422 and r.json()["problems"][0]["pointer"] == "/public/rubric"
        await put(svc, "team", rubric())
        r = await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)
        assert r.status_code == 200, r.text


@pytest.fixture
def stage(endpoint, tmp_path) -> Iterator[JudgeStage]:
    env = {"GRADEBOX_JUDGE_BASE_URL": endpoint.base_url, "GRADEBOX_JUDGE_MODEL": "m"}
    # A shared reply cache: a replaced rubric must never be answered from it.
    made = open_judge_stage(env, rubric_names=["default"], cache_path=tmp_path / "judge.sqlite")
    assert isinstance(made, JudgeStage)
    yield made
    made.close()


def _prompt(raw: str) -> str:
    return json.dumps(json.loads(raw)["messages"])


async def test_the_judge_uses_the_stored_rubric_and_its_replacement(kit, stage, endpoint):
    async with kit.running(register=False, judge=stage) as svc:
        await put(svc, "team", rubric(criterion="TMA001"))
        assert (await svc.client.put("/v1/tasks/inc", json=TASK, headers=svc.admin)).is_success
        body = {"fn": "inc", "code": GOOD, "judge": "wait"}
        row = (await svc.client.post("/v1/grade", json=body, headers=svc.grader)).json()
        assert row["judge"]["status"] == "scored", row["judge"]
        assert row["judge"]["rubric"] == "team@1.0.0"
        assert list(row["judge"]["scores"]) == ["TMA001"]
        assert "tma001-naming" in _prompt(endpoint.raw[-1])
        # Replaced: the next judgement uses the new text, not the cached reply of the old.
        await put(svc, "team", rubric(version="2.0.0", criterion="TMA002"))
        row = (await svc.client.post("/v1/grade", json=body, headers=svc.grader)).json()
        assert row["judge"]["rubric"] == "team@2.0.0" and row["judge"]["cache_hit"] is False
        assert list(row["judge"]["scores"]) == ["TMA002"]
        assert "tma002-naming" in _prompt(endpoint.raw[-1])
        assert "gradebox-rubrics-" not in json.dumps(row)
