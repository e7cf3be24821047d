"""JUnit XML: valid against the JUnit XSD, one suite per task, one case per sample.

``schemas/junit-10.xsd`` is the JUnit schema of Jenkins' xunit plugin (MIT, Gregory
Boissinot), copied unchanged from the PyPI sdist ``pytest`` 9.2.0
(``testing/example_scripts/junit-10.xsd``, which pytest's own junitxml tests
validate against; sha256 a1a816f58d1bf95ebabf371994df0b92
46dee66ea9572fbec4f9296f1b2c0ff6).
"""

from __future__ import annotations

import hashlib
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema
from click.testing import CliRunner

from gradebox.cli.grade import grade
from gradebox.grade import Grade, StaticFinding, StaticReport
from gradebox.reports.junit import NotRun, case_state, write_junit

HERE = Path(__file__).parent
_FAILING = ("wrong", "error", "not_raised", "crash")
XSD = HERE / "schemas" / "junit-10.xsd"
EXAMPLES = HERE.parents[2] / "examples"


@pytest.fixture(scope="module")
def schema():
    assert (
        hashlib.sha256(XSD.read_bytes()).hexdigest()
        == "a1a816f58d1bf95ebabf371994df0b9246dee66ea9572fbec4f9296f1b2c0ff6"
    )
    return xmlschema.XMLSchema(XSD)


def _row(sid, fn, verdict, reason, outcomes, **extra):
    row = {
        "id": sid,
        "fn": fn,
        "pass": verdict == "pass",
        "verdict": verdict,
        "reason": reason,
        "outcomes": outcomes,
        "failed": [i for i, o in enumerate(outcomes) if o in _FAILING],
        "timeouts": [i for i, o in enumerate(outcomes) if o == "timeout"],
        "gate": {"syntax": "ok", "banned": [], "contract": "ok"},
        "claim": "none",
        "latency_ms": 12.5,
        "infra_error": None,
        "static": None,
        "judge": None,
    }
    return row | extra


ROWS = [
    _row("p", "inc", "pass", "ok", ["ok", "ok"]),
    _row("f", "inc", "fail", "hidden_tests", ["ok", "wrong"]),
    _row("t", "inc", "fail", "hidden_tests", ["timeout", "not_run"]),
    _row(
        "g",
        "dec",
        "fail",
        "gate:banned_import",
        ["not_run"] * 2,
        gate={"syntax": "ok", "banned": ["os"], "contract": "ok"},
    ),
    _row("i", "dec", "needs_review", "infra_error", [], infra_error="worker died"),
    _row("r", "dec", "needs_review", "judge:mismatch", ["ok", "ok"]),
    _row("s", "dec", "needs_review", "policy:static", ["not_run", "not_run"]),
]


def _write(tmp_path, rows, **kw):
    path = tmp_path / "junit.xml"
    write_junit([Grade.from_row(r) for r in rows], path, **kw)
    return path


def test_states():
    assert [case_state(Grade.from_row(r)) for r in ROWS] == [
        "passed", "failure", "failure", "failure", "error", "failure", "skipped",
    ]  # fmt: skip


def test_valid_and_one_suite_per_task_one_case_per_sample(tmp_path, schema):
    path = _write(tmp_path, ROWS, not_run=[NotRun("late", "inc", "run interrupted")])
    schema.validate(str(path))
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("8", "4", "1")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["dec", "inc"]
    inc = suites["inc"]
    assert [c.get("name") for c in inc.findall("testcase")] == ["p", "f", "t", "late"]
    assert (inc.get("tests"), inc.get("failures"), inc.get("errors"), inc.get("skipped")) == (
        "4", "2", "0", "1",
    )  # fmt: skip
    props = {p.get("name"): p.get("value") for p in inc.iter("property")}
    assert props == {"n": "3", "passed": "1", "pass@1": "0.3333"}
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert list(cases["p"]) == []
    assert cases["f"].find("failure").get("type") == "hidden_tests"
    assert "1 of 2 hidden cases not ok (1 wrong)" in cases["f"].find("failure").get("message")
    assert "outcomes: 0:ok 1:wrong" in cases["f"].find("failure").text
    assert cases["g"].find("failure").get("message") == "fail (gate:banned_import): imports os"
    assert cases["i"].find("error").get("type") == "infra_error"
    assert cases["i"].find("error").get("message") == "worker died"
    assert cases["r"].find("failure").get("type") == "needs_review:judge:mismatch"
    assert cases["s"].find("skipped") is not None
    assert cases["late"].find("skipped").get("message") == "run interrupted"
    assert cases["f"].get("time") == "0.013" and cases["f"].get("classname") == "gradebox.inc"


def test_hostile_text_is_escaped_and_stays_valid_xml(tmp_path, schema):
    nasty = '<script>alert("x")</script>]]>&\x00\x1b\ud800'
    rows = [
        _row(nasty, "f<&>", "fail", "contract", ["not_run"], detail=nasty),
        _row(
            "ok",
            "f<&>",
            "fail",
            "hidden_tests",
            ["wrong"],
            static=StaticReport(
                findings=(StaticFinding("lint", "X1", "low", 1, 1, nasty),),
                metrics=None,
                diff=None,
                effect="pass",
                deciding=(),
                infra_error=None,
            ).to_json(),
        ),
    ]
    path = _write(tmp_path, rows)
    schema.validate(str(path))
    raw = path.read_bytes()
    assert b"<script>" not in raw and b"\x00" not in raw and b"\x1b" not in raw
    root = ET.parse(path).getroot()
    case = root.find("testsuite/testcase")
    assert case.get("name") == '<script>alert("x")</script>]]>&\\x00\\x1b\\ud800'
    assert root.find("testsuite").get("name") == "f<&>"


def test_empty_run_is_valid(tmp_path, schema):
    schema.validate(str(_write(tmp_path, [])))


def test_a_real_run_of_the_examples(tmp_path, schema):
    out = tmp_path / "results.jsonl"
    args = [
        "--hidden", str(EXAMPLES / "hidden.jsonl"), "--public", str(EXAMPLES / "public.jsonl"),
        "--samples", str(EXAMPLES / "samples.jsonl"), "--out", str(out),
        "--no-judge", "--jobs", "2",
    ]  # fmt: skip
    res = CliRunner().invoke(grade, args)
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    path = _write(tmp_path, rows)
    schema.validate(str(path))
    root = ET.parse(path).getroot()
    assert root.get("tests") == str(len(rows))
    assert root.get("failures") == str(sum(r["verdict"] != "pass" for r in rows))
    names = {c.get("name") for c in root.iter("testcase")}
    assert names == {r["id"] for r in rows}
    shells = next(c for c in root.iter("testcase") if c.get("name") == "fib-shells-out")
    assert "static: line 1: [low] security/B404" in shells.find("failure").text
