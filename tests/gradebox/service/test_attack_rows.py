"""Attacks through rows, as a grader-token client who has read the source.

A client that submits code can make each case's outcome, and the latency, a
function of a hidden argument. Per-task disclosure decides how much of that
comes back; rows are capped, and infrastructure text never reaches a client.
"""

from __future__ import annotations

import json
import logging

import pytest

from gradebox.grade import MAX_TEXT
from gradebox.service.rows import INFRA_MESSAGE
from sandbox.types import Observation, RunResult

pytestmark = pytest.mark.anyio

SECRET = "SECRET-ARG-77aa"
TASK = {"hidden": [{"args": [3], "expect": 0}, {"args": [70], "expect": 0}]}
# Probes that differ only in which case they fail, by comparing the hidden argument to 50.
PROBE_LOW = "def f(x):\n    if x < 50:\n        return 1\n    raise ValueError\n"
PROBE_HIGH = "def f(x):\n    if x >= 50:\n        return 1\n    raise ValueError\n"
SLEEPY = "import time\ndef f(x):\n    time.sleep(x / 1000)\n    return 1\n"


async def _grade(svc, code, headers=None):
    r = await svc.client.post(
        "/v1/grade", json={"fn": "f", "code": code}, headers=headers or svc.grader
    )
    assert r.status_code == 200, r.text
    return r.json()


def _comparable(row):
    return {k: v for k, v in row.items() if k not in ("latency_ms", "grade_id")}


@pytest.mark.parametrize("disclosure", [None, "counts", "verdict"])
async def test_outcomes_do_not_tell_which_case_failed(kit, disclosure):
    body = TASK | ({"disclosure": disclosure} if disclosure else {})
    async with kit.running(register=False) as svc:
        assert (await svc.client.put("/v1/tasks/f", json=body, headers=svc.admin)).is_success
        low, high = await _grade(svc, PROBE_LOW), await _grade(svc, PROBE_HIGH)
        assert low["verdict"] == high["verdict"] == "fail"
        # Identical rows: the probes learn nothing about which argument is below 50.
        assert _comparable(low) == _comparable(high)
        assert "outcomes" not in low and "failed" not in low and "timeouts" not in low
        assert low["disclosure"] == (disclosure or "counts")
        if low["disclosure"] == "counts":
            assert low["counts"] == {"passed": 0, "failed": 2, "timed_out": 0}
        else:
            assert "counts" not in low
        # The same through a run: rows, status summary and diff.
        r = await svc.client.post(
            "/v1/runs", json=[{"fn": "f", "code": PROBE_LOW}] * 2, headers=svc.grader
        )
        run = r.json()["id"]
        status = await svc.wait_run(run, svc.grader)
        assert status["summary"]["with_errors"] is None
        rows = (await svc.client.get(f"/v1/runs/{run}/results", headers=svc.grader)).text
        assert all("outcomes" not in json.loads(x) for x in rows.splitlines())
        # An admin reads every row in full.
        full = (await svc.client.get(f"/v1/runs/{run}/results", headers=svc.admin)).text
        assert json.loads(full.splitlines()[0])["outcomes"] == ["wrong", "error"]


async def test_cases_disclosure_shows_outcomes(kit):
    async with kit.running(register=False) as svc:
        body = TASK | {"disclosure": "cases"}
        await svc.client.put("/v1/tasks/f", json=body, headers=svc.admin)
        low, high = await _grade(svc, PROBE_LOW), await _grade(svc, PROBE_HIGH)
        assert low["outcomes"] == ["wrong", "error"] and high["outcomes"] == ["error", "wrong"]
        assert (await svc.client.get("/v1/tasks/f", headers=svc.admin)).json()[
            "disclosure"
        ] == "cases"


@pytest.mark.parametrize(("disclosure", "expect"), [("counts", "coarse"), ("verdict", None)])
async def test_latency_is_coarsened_or_withheld(kit, disclosure, expect):
    async with kit.running(register=False) as svc:
        body = {"hidden": [{"args": [1], "expect": 1}], "disclosure": disclosure}
        await svc.client.put("/v1/tasks/f", json=body, headers=svc.admin)
        for _ in range(3):
            latency = (await _grade(svc, SLEEPY))["latency_ms"]
            if expect is None:
                assert latency is None
            else:
                assert latency > 0 and latency % 100 == 0, latency


class ForgingSandbox:
    """The real sandbox, except that it returns what a compromised worker would send."""

    def __init__(self, real):
        self._real = real

    def __getattr__(self, name):
        return getattr(self._real, name)

    def run(self, code, fn, cases, limits):
        if "FORGE" in code:
            return RunResult(
                observations=tuple(Observation("not_run") for _ in cases),
                infra_error=f"worker said: {SECRET} " * 10_000,
            )
        return self._real.run(code, fn, cases, limits)


async def test_worker_text_never_reaches_a_client(kit, caplog):
    caplog.set_level(logging.WARNING, logger="gradebox.service")
    async with kit.running_with(ForgingSandbox(kit.sandbox), register=False) as svc:
        body = {"hidden": [{"args": [1], "expect": 1}], "disclosure": "cases"}
        await svc.client.put("/v1/tasks/f", json=body, headers=svc.admin)
        forged = "def f(x):\n    return 'FORGE'\n"
        texts = []
        for headers in (svc.grader, svc.admin):
            r = await svc.client.post(
                "/v1/grade", json={"fn": "f", "code": forged}, headers=headers
            )
            assert r.json()["verdict"] == "needs_review"
            assert r.json()["infra_error"] == INFRA_MESSAGE
            texts.append(r.text)
        r = await svc.client.post(
            "/v1/runs", json=[{"fn": "f", "code": forged}], headers=svc.grader
        )
        await svc.wait_run(r.json()["id"], svc.grader)
        texts.append(
            (await svc.client.get(f"/v1/runs/{r.json()['id']}/results", headers=svc.admin)).text
        )
        assert all(SECRET not in t for t in texts)
        logged = [rec.getMessage() for rec in caplog.records if SECRET in rec.getMessage()]
        assert logged and all(len(m) < 2 * MAX_TEXT for m in logged)  # the cause, bounded


async def test_detail_and_rows_are_capped(kit):
    # 1200 helpers with long names: the contract detail lists every one of them.
    names = [f"helper_{i:04d}_" + "x" * 60 for i in range(1200)]
    code = "def f(x):\n    return 1\n" + "".join(f"def {n}():\n    pass\n" for n in names)
    async with kit.running(register=False) as svc:
        await svc.client.put("/v1/tasks/f", json=TASK | {"disclosure": "cases"}, headers=svc.admin)
        row = (
            await svc.client.post("/v1/grade", json={"fn": "f", "code": code}, headers=svc.grader)
        ).json()
        assert row["gate"]["contract"] == "multiple_functions"
        assert 100 < len(row["detail"]) <= MAX_TEXT  # it would be ~90 KB uncut
    (kit.tmp / "svc.sqlite").unlink()
    async with kit.running(register=False, max_row_bytes=1500) as svc:
        body = {"hidden": [{"args": [i], "expect": 1} for i in range(300)], "disclosure": "cases"}
        await svc.client.put("/v1/tasks/f", json=body, headers=svc.admin)
        r = await svc.client.post("/v1/grade", json={"fn": "f", "code": code}, headers=svc.grader)
        row = r.json()
        assert row["verdict"] == "fail" and row["reason"] == "contract"
        assert len(row.get("detail", "")) <= MAX_TEXT and len(r.content) <= 1500
        good = await _grade(svc, "def f(x):\n    return 1\n")
        assert good["verdict"] == "pass"
        assert len(json.dumps(good)) <= 1500 and good.get("truncated") is True


def test_a_cap_hit_is_one_more_bit_only_below_verdict_disclosure():
    from gradebox.service.rows import shown

    row = {
        "id": "s",
        "fn": "f",
        "pass": False,
        "verdict": "fail",
        "reason": "hidden_tests",
        "failed": [],
        "timeouts": [0],
        "outcomes": ["timeout"],
        "latency_ms": 1234.5,
        "caps_hit": ["processes"],
    }
    assert shown(dict(row, disclosure="cases"), admin=False)["caps_hit"] == ["processes"]
    assert shown(dict(row, disclosure="counts"), admin=False)["caps_hit"] == ["processes"]
    assert "caps_hit" not in shown(dict(row, disclosure="verdict"), admin=False)
    assert shown(dict(row, disclosure="verdict"), admin=True)["caps_hit"] == ["processes"]
