"""The verdict: nothing but all-ok hidden tests (and a clean gate) makes a pass."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gradebox.verdict import decide

OUTCOMES = st.sampled_from(["ok", "wrong", "error", "timeout", "crash", "not_run"])


@given(
    infra=st.booleans(),
    contract=st.booleans(),
    syntax=st.booleans(),
    banned=st.lists(st.sampled_from(["os", "socket"]), max_size=2),
    claim=st.sampled_from(["none", "held", "false", "unchecked"]),
    outcomes=st.lists(OUTCOMES, max_size=6),
    static_fail=st.booleans(),
    static_review=st.booleans(),
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
    static_fail,
    static_review,
    judge_mismatch,
    judge_unscored,
):
    v = decide(
        infra_error=infra,
        contract_ok=contract,
        syntax_ok=syntax,
        banned=banned,
        claim=claim,
        outcomes=outcomes,
        static_fail=static_fail,
        static_review=static_review,
        judge_mismatch=judge_mismatch,
        judge_unscored=judge_unscored,
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
        assert clean and not (static_fail or static_review or judge_mismatch or judge_unscored)
    if not clean:
        assert v.verdict != "pass"


@given(
    outcomes=st.lists(OUTCOMES, min_size=1, max_size=6).filter(
        lambda o: o[0] != "ok" or len(set(o)) > 1
    )
)
def test_no_static_or_judge_result_turns_a_failed_test_into_a_pass(outcomes):
    v = decide(
        infra_error=False,
        contract_ok=True,
        syntax_ok=True,
        banned=[],
        claim="none",
        outcomes=outcomes,
    )
    if any(o != "ok" for o in outcomes):
        assert (v.verdict, v.reason) == ("fail", "hidden_tests")


def test_reasons_in_pipeline_order():
    base = dict(
        infra_error=False,
        contract_ok=True,
        syntax_ok=True,
        banned=[],
        claim="none",
        outcomes=["ok"],
    )
    assert decide(**base).verdict == "pass"
    assert decide(**{**base, "infra_error": True}).reason == "infra_error"
    assert decide(**{**base, "infra_error": True}).verdict == "needs_review"
    assert decide(**{**base, "contract_ok": False, "syntax_ok": False}).reason == "contract"
    assert decide(**{**base, "syntax_ok": False, "banned": ["os"]}).reason == "gate:syntax"
    assert decide(**{**base, "banned": ["os"], "claim": "false"}).reason == "gate:banned_import"
    assert decide(**{**base, "claim": "false", "outcomes": ["wrong"]}).reason == "claim_false"
    assert decide(**{**base, "outcomes": []}).reason == "hidden_tests"
    assert decide(**{**base, "static_fail": True}).reason == "policy:static"
    assert decide(**{**base, "judge_unscored": True}).verdict == "needs_review"
