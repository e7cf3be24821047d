"""The verdict: nothing but all-ok hidden tests (and a clean gate) makes a pass.

``decide`` reads the typed parts of a grade only; these tests build the parts
each layer would produce and check the one rule from every angle.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gradebox.grade import GateReport, StaticReport, TestsReport
from gradebox.verdict import decide
from judge import JudgeResult

OUTCOMES = st.sampled_from(
    ["ok", "wrong", "error", "not_raised", "timeout", "crash", "resource", "not_run"]
)


def make_tests(
    *, infra=False, contract=True, syntax=True, banned=(), claim="none", outcomes=("ok",)
):
    return TestsReport(
        outcomes=tuple(outcomes),
        gate=GateReport(
            "ok" if syntax else "error", tuple(banned), "ok" if contract else "no_code"
        ),
        claim=claim,
        latency_ms=1.0,
        infra_error="sandbox broke" if infra else None,
    )


def static_part(effect="pass", *, infra=False):
    return StaticReport((), {}, None, effect, (), {"types": "mypy died"} if infra else None)


def judge_part(*, mismatch=False, unscored=False):
    if unscored:
        return JudgeResult(status="needs_review", reason_code="schema", reason="bad reply")
    return JudgeResult(status="scored", verdict="mismatch" if mismatch else "match")


@given(
    infra=st.booleans(),
    contract=st.booleans(),
    syntax=st.booleans(),
    banned=st.lists(st.sampled_from(["os", "socket"]), max_size=2),
    claim=st.sampled_from(["none", "held", "false", "unchecked"]),
    outcomes=st.lists(OUTCOMES, max_size=6),
    effect=st.sampled_from(["pass", "review", "fail"]),
    static_infra=st.booleans(),
    judge_mismatch=st.booleans(),
    judge_unscored=st.booleans(),
)
def test_pass_requires_every_case_ok_and_a_clean_gate(
    infra,
    contract,
    syntax,
    banned,
    claim,
    outcomes,
    effect,
    static_infra,
    judge_mismatch,
    judge_unscored,
):
    t = make_tests(
        infra=infra, contract=contract, syntax=syntax, banned=banned, claim=claim, outcomes=outcomes
    )
    v = decide(
        t,
        static_part(effect, infra=static_infra),
        judge_part(mismatch=judge_mismatch, unscored=judge_unscored),
    )
    clean = (
        not infra
        and contract
        and syntax
        and not banned
        and claim != "false"
        and bool(outcomes)
        and all(o == "ok" for o in outcomes)
    )
    if v.passed:
        assert clean and effect == "pass" and not static_infra
        assert not (judge_mismatch or judge_unscored)
    if not clean:
        assert v.verdict != "pass"


@given(
    outcomes=st.lists(OUTCOMES, min_size=1, max_size=6).filter(
        lambda o: o[0] != "ok" or len(set(o)) > 1
    ),
    effect=st.sampled_from(["pass", "review", "fail"]),
)
def test_no_static_or_judge_result_turns_a_failed_test_into_a_pass(outcomes, effect):
    v = decide(make_tests(outcomes=outcomes), static_part(effect), judge_part())
    if any(o != "ok" for o in outcomes):
        assert (v.verdict, v.reason) == ("fail", "hidden_tests")


def test_reasons_in_pipeline_order():
    assert decide(make_tests(), None, None).verdict == "pass"
    assert decide(make_tests(infra=True), None, None).reason == "infra_error"
    assert decide(make_tests(infra=True), None, None).verdict == "needs_review"
    assert decide(make_tests(contract=False, syntax=False), None, None).reason == "contract"
    assert decide(make_tests(syntax=False, banned=["os"]), None, None).reason == "gate:syntax"
    got = decide(make_tests(banned=["os"], claim="false"), None, None)
    assert got.reason == "gate:banned_import"
    got = decide(make_tests(claim="false", outcomes=["wrong"]), None, None)
    assert got.reason == "claim_false"
    assert decide(make_tests(outcomes=[]), None, None).reason == "hidden_tests"
    assert decide(make_tests(), static_part("fail"), None).reason == "policy:static"
    assert decide(make_tests(), None, judge_part(unscored=True)).verdict == "needs_review"
    assert decide(make_tests(), None, judge_part(mismatch=True)).reason == "judge:mismatch"
    assert decide(make_tests(), static_part("review"), None).reason == "policy:static"


def test_a_sample_never_gated_is_an_infra_error_not_a_failure():
    never = TestsReport(outcomes=(), gate=None, claim="none", latency_ms=0.0)
    assert (decide(never, None, None).verdict, decide(never, None, None).reason) == (
        "needs_review",
        "infra_error",
    )


def test_static_infra_error_never_rescues_or_hides_a_failure():
    broken = static_part(infra=True)
    assert decide(make_tests(), broken, None).reason == "infra_error"
    assert decide(make_tests(), broken, None).verdict == "needs_review"
    assert decide(make_tests(outcomes=["wrong"]), broken, None).reason == "hidden_tests"
    both = decide(make_tests(), static_part("fail", infra=True), None)
    assert (both.verdict, both.reason) == ("fail", "policy:static")
