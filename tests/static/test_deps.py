"""The deps layer on the real PyPA snapshot: findings, severities, the policy, SARIF, rule docs.

Data: the PyPA advisory database (CC-BY 4.0), github.com/pypa/advisory-database.
"""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest
from advisory_data import real_store

from static import deps
from static.depfiles import declarations, is_dependency_file
from static.policy import DEFAULT_POLICY, Policy, Selector, apply, deciding
from static.sarif import load_rule_docs, to_sarif

ENV = {"jinja2": ["Jinja2"], "yaml": ["PyYAML"], "requests": ["requests"]}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    with real_store(tmp_path_factory) as s:
        yield s


def _check(store, code, pins=None, installed=None):
    return deps.check(code, store, pins, installed=installed or {}, environment=ENV)


def test_a_lockfile_pin_in_a_known_range_is_found_at_the_import(store):
    code = "import os\nfrom jinja2 import Template\n"
    found = _check(store, code, {"jinja2": "2.7"})
    first = next(f for f in found if f.refs[0] == "PYSEC-2014-8")
    assert (first.layer, first.rule, first.severity, first.line, first.col) == (
        "deps", "GBX312", "info", 2, 1,
    )  # fmt: skip
    assert first.refs == ("PYSEC-2014-8", "CVE-2014-1402", "GHSA-8r7q-cvjq-x353")
    assert "fixed in 2.7.2" in first.message and "severity unknown" in first.message
    assert _check(store, code, {"jinja2": "3.1.4"}) == []


def test_the_candidates_own_pin_wins_and_a_rated_advisory_keeps_its_severity(store):
    code = (
        "# /// script\n"
        '# dependencies = ["jinja2==3.1.4", "apache-skywalking==0.7.0"]\n'
        "# ///\n"
        "import jinja2\n"
    )
    found = _check(store, code, {"jinja2": "2.7"})
    assert [f.refs[0] for f in found] == ["PYSEC-2020-342"]  # jinja2 3.1.4 is clean
    [rated] = found
    assert (rated.rule, rated.severity, rated.line) == ("GBX311", "high", 2)
    assert "severity critical (CVSS 9.8)" in rated.message


def test_without_a_lockfile_the_installed_version_is_used_and_said(store):
    found = _check(store, "import yaml\n", None, installed={"pyyaml": "5.3"})
    assert {f.refs[0] for f in found} == {"PYSEC-2020-96", "PYSEC-2021-142"}
    assert all("installed here" in f.message for f in found)


def test_an_unpinned_dependency_with_advisories_is_unchecked_not_clean(store):
    [found] = _check(store, "import requests\n", {"requests": ">=2"})
    assert (found.rule, found.severity) == ("GBX313", "info")
    assert _check(store, "import requests\n", {"requests": "2.19.0 || 2.32.3"})  # each checked


def test_the_policy_selects_by_severity_and_by_any_advisory_id(store):
    found = _check(store, "import jinja2\n", {"jinja2": "2.7"})
    assert apply(found, DEFAULT_POLICY) == "review"  # unrated: never a guessed "high"
    rated = _check(store, '# /// script\n# dependencies = ["apache-skywalking==0.7.0"]\n# ///\n')
    assert apply(rated, DEFAULT_POLICY) == "fail"
    by_alias = Policy(fail_on=(Selector(layer="deps", rules=("CVE-2014-1402",)),))
    assert [f.refs[0] for f in deciding(found, by_alias)] == ["PYSEC-2014-8"]
    low = Policy(fail_on=(Selector(layer="deps", min_severity="low"),), review_on=())
    assert apply(found, low) == "pass"
    allowed = Policy(
        fail_on=(Selector(layer="deps", except_rules=("GHSA-*", "PYSEC-*")),), review_on=()
    )
    assert apply(found, allowed) == "pass"  # every advisory allowed by its ids


def test_sarif_carries_the_rule_docs_and_the_ids(store):
    found = _check(store, "import jinja2\n", {"jinja2": "2.7"})
    log = to_sarif([("s1", "candidates/s1.py", found)], "0")
    [rule] = log["runs"][0]["tool"]["driver"]["rules"]
    assert rule["id"] == "GBX312" and "no severity" in rule["shortDescription"]["text"]
    result = log["runs"][0]["results"][0]
    assert result["properties"]["refs"] == list(found[0].refs)


def test_the_rule_docs_are_complete_in_ruff_shape():
    text = resources.files("static").joinpath("rules_deps.toml").read_text(encoding="utf-8")
    assert sorted(load_rule_docs(text)) == ["GBX311", "GBX312", "GBX313"]
    for rule, entry in tomllib.loads(text).items():
        for field in ("name", "layer", "severity", "what", "why", "example", "use_instead"):
            assert entry.get(field), (rule, field)
        assert entry["layer"] == "deps"


def test_dependency_files_declare_pins_at_their_lines():
    assert is_dependency_file("requirements-docs.txt") and is_dependency_file("a/uv.lock")
    assert not is_dependency_file("notes.txt")
    req = "# docs\njinja2==2.7  # pinned\nrequests>=2\n-r other.txt\n"
    assert [(d.dist, d.value, d.line) for d in declarations("requirements.txt", req)] == [
        ("jinja2", "2.7", 2), ("requests", ">=2", 3),
    ]  # fmt: skip
    lock = (
        '[[package]]\nname = "Jinja2"\nversion = "2.7"\n\n'
        '[[package]]\nname = "py"\nversion = "1.11.0"\n'
    )
    assert [(d.dist, d.line) for d in declarations("uv.lock", lock)] == [("jinja2", 3), ("py", 7)]
    pyproject = '[project]\nname = "x"\ndependencies = [\n  "jinja2==2.7",\n]\n'
    assert [(d.dist, d.line) for d in declarations("pyproject.toml", pyproject)] == [("jinja2", 4)]
    assert declarations("pyproject.toml", "not = [toml") == []
