"""Outcome feedback and GET /v1/stats: counts, Wilson intervals, per-token privacy.

Rows are real grades (real sandbox; static sessions and the local judge endpoint
where a test needs them); feedback goes in through the API and the stats must add
up to exactly what was sent.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradebox.judging.stats import wilson
from gradebox.pipeline.judge import JudgeStage, open_judge_stage

pytestmark = pytest.mark.anyio

EVEN = (
    "def is_even(n):\n    if type(n) is not int:\n        raise TypeError\n    return n % 2 == 0\n"
)
ODD = "def is_even(n):\n    return n % 2 == 1\n"
REVIEWER, NOTE = "reviewer-CANARY-71c2", "note-CANARY-0b9e"


async def grade(svc, code, headers=None, fn="is_even", **layers):
    body = {"fn": fn, "code": code, **layers}
    r = await svc.client.post("/v1/grade", json=body, headers=headers or svc.grader)
    assert r.status_code == 200, r.text
    return r.json()


async def feedback(svc, grade_id, accepted, headers=None, **extra):
    return await svc.client.post(
        f"/v1/grades/{grade_id}/feedback",
        json={"accepted": accepted, **extra},
        headers=headers or svc.grader,
    )


async def get_stats(svc, headers=None, **query):
    r = await svc.client.get("/v1/stats", params=query, headers=headers or svc.grader)
    assert r.status_code == 200, r.text
    return r.json()


def _r(interval):
    return [round(interval.low, 4), round(interval.high, 4)]


def test_wilson_matches_published_values():
    # Newcombe (1998), table I: 81/263 -> 0.2553..0.3662; and the textbook 8/10.
    assert _r(wilson(81, 263)) == [0.2553, 0.3662]
    assert _r(wilson(8, 10)) == [0.4902, 0.9433]
    assert _r(wilson(0, 10)) == [0.0, 0.2775]
    assert wilson(0, 0) is None


@given(st.integers(1, 10_000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_holds_the_rate_within_zero_and_one(kn):
    k, n = kn
    interval = wilson(k, n)
    low, high = interval.to_json()  # as shown: rounded to 4 places
    assert 0.0 <= low <= k / n <= high <= 1.0
    # Never wider than Wald's widest (unrounded: rounding may widen it by up to 1e-4).
    assert interval.high - interval.low <= 2 * 1.96 * math.sqrt(0.25 / n) + 1e-9


async def test_feedback_adds_up_to_the_stats(kit):
    async with kit.running() as svc:
        passed = [await grade(svc, EVEN) for _ in range(3)]
        failed = [await grade(svc, ODD) for _ in range(2)]
        assert {r["verdict"] for r in passed} == {"pass"}
        assert {r["verdict"] for r in failed} == {"fail"}
        sent = [(passed[0], True), (passed[1], True), (passed[2], False)]
        sent += [(failed[0], True), (failed[1], False)]
        for row, accepted in sent:
            r = await feedback(svc, row["grade_id"], accepted, reviewer=REVIEWER, note=NOTE)
            assert r.status_code == 200, r.text
        # Sending again replaces: still five feedbacks, the last word counts.
        r = await feedback(svc, passed[2]["grade_id"], False)
        assert r.status_code == 200
        stats = await get_stats(svc)
        assert (stats["feedback"], stats["accepted"]) == (5, 3)
        by = stats["by_verdict"]
        assert (by["pass"]["n"], by["pass"]["accepted"], by["pass"]["rate"]) == (3, 2, 0.6667)
        assert by["pass"]["ci95"] == _r(wilson(2, 3))
        assert (by["fail"]["n"], by["fail"]["accepted"]) == (2, 1)
        assert stats["pass_rejected"] == {
            "n": 3,
            "rejected": 1,
            "rate": 0.3333,
            "ci95": _r(wilson(1, 3)),
        }
        assert (stats["fail_accepted"]["n"], stats["fail_accepted"]["accepted"]) == (2, 1)
        # Static and judge were off on these rows.
        assert stats["by_static_effect"] == {"off": stats["acceptance"]}
        assert stats["by_judge_verdict"] == {"off": stats["acceptance"]}
        text = json.dumps(stats)
        assert REVIEWER not in text and NOTE not in text


async def test_feedback_and_stats_are_per_token(kit):
    async with kit.running() as svc:
        mine = await grade(svc, EVEN)
        theirs = await grade(svc, ODD, headers=svc.other)
        # Another token's grade is 404, exactly like a missing one.
        r1 = await feedback(svc, theirs["grade_id"], True)
        r2 = await feedback(svc, "0" * 24, True)
        assert (
            (r1.status_code, r1.json())
            == (r2.status_code, r2.json())
            == (
                404,
                {"detail": "not found"},
            )
        )
        assert (await feedback(svc, mine["grade_id"], True)).status_code == 200
        assert (await feedback(svc, theirs["grade_id"], False, svc.other)).status_code == 200
        assert (await get_stats(svc))["by_verdict"] == {
            "pass": {"n": 1, "accepted": 1, "rate": 1.0, "ci95": [0.2065, 1.0]}
        }
        assert list((await get_stats(svc, svc.other))["by_verdict"]) == ["fail"]
        assert (await get_stats(svc, svc.admin))["feedback"] == 2  # an admin sees everyone's


async def test_run_samples_take_feedback_by_id(kit):
    async with kit.running() as svc:
        samples = [
            {"id": "a", "fn": "is_even", "code": EVEN},
            {"id": "b", "fn": "is_even", "code": ODD},
        ]
        run_id = (await svc.client.post("/v1/runs", json=samples, headers=svc.grader)).json()["id"]
        await svc.wait_run(run_id, svc.grader)
        url = f"/v1/runs/{run_id}/samples/b/feedback"
        r = await svc.client.post(url, json={"accepted": True}, headers=svc.grader)
        assert r.status_code == 200, r.text
        r = await svc.client.post(url, json={"accepted": True}, headers=svc.other)
        assert r.status_code == 404  # not their run
        missing = f"/v1/runs/{run_id}/samples/nope/feedback"
        assert (
            await svc.client.post(missing, json={"accepted": True}, headers=svc.grader)
        ).status_code == 404
        stats = await get_stats(svc)
        assert stats["fail_accepted"]["accepted"] == 1 and stats["feedback"] == 1


async def test_since_and_task_filter(kit):
    async with kit.running() as svc:
        row = await grade(svc, EVEN)
        await feedback(svc, row["grade_id"], True)
        mean = await grade(svc, "def mean(xs):\n    return sum(xs) / len(xs)\n", fn="mean")
        await feedback(svc, mean["grade_id"], False)
        assert (await get_stats(svc, task="is_even"))["feedback"] == 1
        assert (await get_stats(svc, task="nosuch"))["feedback"] == 0
        assert (await get_stats(svc, since="2000-01-01T00:00:00Z"))["feedback"] == 2
        assert (await get_stats(svc, since="2999-01-01T00:00:00+00:00"))["feedback"] == 0
        assert (await get_stats(svc, since="4102444800"))["feedback"] == 0
        for bad in ("yesterday", "2026-01-01T00:00:00"):  # no zone: ambiguous
            r = await svc.client.get("/v1/stats", params={"since": bad}, headers=svc.grader)
            assert r.status_code == 422 and r.json()["problems"][0]["in"] == "query"


@pytest.mark.parametrize(
    ("body", "pointer"),
    [
        ({"accepted": "yes"}, "/accepted"),
        ({}, "/accepted"),
        ({"accepted": True, "note": "x" * 2001}, "/note"),
        ({"accepted": True, "reviewer": "r" * 201}, "/reviewer"),
        ({"accepted": True, "reviewer": 7}, "/reviewer"),
        ({"accepted": True, "verdict": "pass"}, "/verdict"),
        ([True], ""),
    ],
)
async def test_bad_feedback_is_refused_and_stores_nothing(kit, body, pointer):
    async with kit.running() as svc:
        row = await grade(svc, EVEN)
        r = await svc.client.post(
            f"/v1/grades/{row['grade_id']}/feedback", json=body, headers=svc.grader
        )
        assert r.status_code == 422, r.text
        assert r.json()["problems"][0]["pointer"] == pointer
        assert "x" * 50 not in r.text and "r" * 50 not in r.text
        assert (await get_stats(svc))["feedback"] == 0


@pytest.fixture
def stage(endpoint) -> JudgeStage:
    env = {"GRADEBOX_JUDGE_BASE_URL": endpoint.base_url, "GRADEBOX_JUDGE_MODEL": "m"}
    made = open_judge_stage(env, rubric_names=["default"], no_cache=True)
    assert isinstance(made, JudgeStage)
    yield made
    made.close()


async def test_stats_by_static_effect_and_judge_verdict(kit, static_service, stage, endpoint):
    md5 = "import hashlib\n\n\ndef is_even(n: int) -> bool:\n    hashlib.md5(b'x')\n" + (
        "    if type(n) is not int:\n        raise TypeError\n    return n % 2 == 0\n"
    )
    async with kit.running(static=static_service, judge=stage) as svc:
        endpoint.verdict = "match"
        clean = await grade(svc, EVEN, static=True, judge="wait")
        endpoint.verdict = "mismatch"
        flagged = await grade(svc, md5, static=True, judge="wait")
        assert clean["static"]["effect"] == "pass" and flagged["static"]["effect"] == "fail"
        assert clean["judge"]["verdict"] == "match" and flagged["judge"]["verdict"] == "mismatch"
        await feedback(svc, clean["grade_id"], True)
        await feedback(svc, flagged["grade_id"], False)
        stats = await get_stats(svc)
        assert {k: (v["n"], v["accepted"]) for k, v in stats["by_static_effect"].items()} == {
            "pass": (1, 1),
            "fail": (1, 0),
        }
        assert {k: (v["n"], v["accepted"]) for k, v in stats["by_judge_verdict"].items()} == {
            "match": (1, 1),
            "mismatch": (1, 0),
        }
