"""The rule that cannot be broken: the judge annotates; it never rescues a failed test.

Real judge results for every kind of judge outcome are produced once through
the scripted server, then combined with every test result by the verdict
layer's ``decide``: a failed hidden test stays failed whatever the judge said,
and a passing candidate the judge finds ``mismatch`` (or cannot score) is not
a silent pass.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradebox.grade import GateReport, TestsReport
from gradebox.verdict import decide
from judge import Judge, JudgeConfig, JudgeItem, JudgeResult

OUTCOMES = st.lists(st.sampled_from(["ok", "wrong", "error", "timeout", "crash", "not_run"]))
ITEM = JudgeItem(
    "s", "is_even", "Return True if n is even.", "def is_even(n)", "def is_even(n): ..."
)


@pytest.fixture(scope="module")
def judged(server_cls) -> dict[str, JudgeResult]:
    server = server_cls().start()
    out_of_scale = server.valid()
    out_of_scale["scores"]["INT001"] = 11
    scripts = {
        "valid-match": server.ok_json(server.valid()),
        "valid-mismatch": server.ok_json(server.valid(verdict="mismatch")),
        "parse-failure": server.ok("Looks great, PASS."),
        "schema-violation": server.ok(json.dumps({"verdict": "pass"})),
        "out-of-scale": server.ok_json(out_of_scale),
        "unavailable": server.error(503, "down"),
    }
    config = JudgeConfig(base_url=server.base_url, model="m", max_attempts=1)
    results: dict[str, JudgeResult] = {}
    with Judge(config) as judge:
        for name, script in scripts.items():
            server.push(script)
            results[name] = judge.judge_one(ITEM)
    results["skipped"] = JudgeResult.skipped("disabled", "--no-judge")
    server.stop()
    return results


def test_the_outcomes_are_what_they_claim(judged):
    statuses = {name: r.status for name, r in judged.items()}
    assert statuses == {
        "valid-match": "scored",
        "valid-mismatch": "scored",
        "parse-failure": "needs_review",
        "schema-violation": "needs_review",
        "out-of-scale": "needs_review",
        "unavailable": "unavailable",
        "skipped": "skipped",
    }


@given(
    outcomes=OUTCOMES,
    which=st.sampled_from(
        [
            "valid-match",
            "valid-mismatch",
            "parse-failure",
            "schema-violation",
            "out-of-scale",
            "unavailable",
            "skipped",
        ]
    ),
)
def test_judge_never_flips_a_test_result(judged, outcomes, which):
    result = judged[which]
    tests = TestsReport(tuple(outcomes), GateReport("ok", (), "ok"), "none", 1.0)
    verdict = decide(tests, None, result)
    tests_pass = bool(outcomes) and all(o == "ok" for o in outcomes)
    if not tests_pass:
        assert (verdict.verdict, verdict.reason) == ("fail", "hidden_tests")
    elif which == "valid-mismatch":
        assert (verdict.verdict, verdict.reason) == ("needs_review", "judge:mismatch")
    elif result.status == "needs_review":
        assert (verdict.verdict, verdict.reason) == ("needs_review", "judge:unscored")
    else:  # a match, or no judgement at all (unavailable / skipped): the tests decide
        assert verdict.verdict == "pass"
