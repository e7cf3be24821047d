"""Tests for static.policy: the default policy, selectors, configuration and invariants."""

from __future__ import annotations

import tomllib
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from static.findings import Finding, Layer, Severity
from static.policy import DEFAULT_POLICY, Policy, Selector, apply, deciding


def finding(layer: Layer, rule: str, severity: Severity) -> Finding:
    return Finding(layer, rule, severity, 1, 1, "message")


@pytest.mark.parametrize(
    ("found", "effect"),
    [
        ([], "pass"),
        ([finding("security", "B602", "high")], "fail"),
        ([finding("security", "B608", "medium")], "pass"),
        ([finding("security", "B105", "low")], "pass"),
        ([finding("imports", "GBX101", "high")], "fail"),
        ([finding("imports", "GBX102", "medium")], "pass"),
        ([finding("lint", "F821", "high")], "pass"),
        ([finding("types", "GBX001", "medium")], "pass"),
        ([finding("lint", "F401", "low"), finding("security", "B501", "high")], "fail"),
    ],
)
def test_default_policy(found: list[Finding], effect: str) -> None:
    assert apply(found) == effect
    assert apply(found, DEFAULT_POLICY) == effect


def test_review_and_fail_precedence() -> None:
    policy = Policy(review_on=(Selector(layer="types"),))
    typed = finding("types", "return-value", "medium")
    assert apply([typed], policy) == "review"
    assert apply([typed, finding("security", "B602", "high")], policy) == "fail"
    assert apply([finding("lint", "F401", "low")], policy) == "pass"


@pytest.mark.parametrize(
    ("selector", "matched"),
    [
        (Selector(), True),
        (Selector(layer="security"), True),
        (Selector(layer="lint"), False),
        (Selector(rules=("B6*",)), True),
        (Selector(rules=("B6??",)), True),
        (Selector(rules=("B60",)), False),
        (Selector(rules=("B1*", "B602")), True),
        (Selector(min_severity="medium"), True),
        (Selector(min_severity="high"), False),
        (Selector(except_rules=("B602",)), False),
        (Selector(layer="security", except_rules=("B1*",)), True),
    ],
)
def test_selector(selector: Selector, matched: bool) -> None:
    assert selector.matches(finding("security", "B602", "medium")) is matched


def test_deciding_lists_what_decided() -> None:
    shell, sql = finding("security", "B602", "high"), finding("security", "B608", "medium")
    assert deciding([sql, shell]) == [shell]
    policy = Policy(review_on=(Selector(rules=("B608",)),))
    assert deciding([sql], policy) == [sql]
    assert deciding([sql]) == []


CONFIG = """
[policy]
fail_on = [
    {layer = "security", min_severity = "high", except_rules = ["B324"]},
    {layer = "imports", rules = ["GBX101"]},
]
review_on = [{layer = "types", rules = ["GBX001"]}]
"""


def test_from_mapping_reads_a_task_sets_toml() -> None:
    policy = Policy.from_mapping(tomllib.loads(CONFIG)["policy"])
    assert policy == Policy(
        fail_on=(
            Selector(layer="security", min_severity="high", except_rules=("B324",)),
            Selector(layer="imports", rules=("GBX101",)),
        ),
        review_on=(Selector(layer="types", rules=("GBX001",)),),
    )
    assert apply([finding("security", "B324", "high")], policy) == "pass"
    assert apply([finding("types", "GBX001", "medium")], policy) == "review"


def test_from_mapping_keeps_defaults_for_missing_lists() -> None:
    assert Policy.from_mapping({}) == DEFAULT_POLICY
    only_review = Policy.from_mapping({"review_on": [{"min_severity": "medium"}]})
    assert only_review.fail_on == DEFAULT_POLICY.fail_on


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"fail": []}, "unknown policy keys"),
        ({"fail_on": {"layer": "security"}}, "fail_on must be a list"),
        ({"fail_on": [{"layer": "style"}]}, r"fail_on\[0\]: unknown layer"),
        ({"review_on": [{"min_severity": "critical"}]}, r"review_on\[0\]: unknown severity"),
        ({"fail_on": [{"rule": "B602"}]}, "unknown selector keys"),
        ({"fail_on": [{"rules": "B602"}]}, "rules must be a list"),
        ({"fail_on": [{"rules": [""]}]}, "non-empty strings"),
    ],
)
def test_from_mapping_rejects_bad_config(data: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Policy.from_mapping(data)


findings = st.builds(
    finding,
    layer=st.sampled_from(get_args(Layer)),
    rule=st.sampled_from(["B602", "B608", "GBX101", "GBX102", "F821", "return-value", "GBX001"]),
    severity=st.sampled_from(get_args(Severity)),
)
RANK = {"pass": 0, "review": 1, "fail": 2}
REVIEWING = Policy(review_on=(Selector(min_severity="medium"),))


@given(st.lists(findings), st.lists(findings))
def test_more_findings_never_improve_the_effect(first: list[Finding], more: list[Finding]) -> None:
    for policy in (DEFAULT_POLICY, REVIEWING):
        assert RANK[apply(first + more, policy)] >= RANK[apply(first, policy)]


@given(st.lists(findings), st.randoms())
def test_order_does_not_matter(found: list[Finding], random: object) -> None:
    shuffled = list(found)
    random.shuffle(shuffled)  # type: ignore[attr-defined]
    for policy in (DEFAULT_POLICY, REVIEWING):
        assert apply(shuffled, policy) == apply(found, policy)
