"""Input-space coverage heuristics on a table (tests/cases/suites/coverage.jsonl)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradebox.suite.coverage import assess_coverage
from gradebox.suite.signature import parse_signature
from sandbox.cases import load_hidden

TABLE = Path(__file__).resolve().parents[2] / "cases" / "suites" / "coverage.jsonl"
ROWS = [json.loads(line) for line in TABLE.read_text(encoding="utf-8").splitlines()]


def _cases(tmp_path, row):
    path = tmp_path / "hidden.jsonl"
    path.write_text("".join(json.dumps({"fn": "f", **c}) + "\n" for c in row["cases"]))
    return load_hidden(path)[0]


@pytest.mark.parametrize("row", ROWS, ids=[r["id"] for r in ROWS])
def test_coverage_answers(tmp_path, row):
    signature = row["signature"].replace("def is_even", "def f").replace("def mean", "def f")
    signature = signature.replace("def total", "def f").replace("def split", "def f")
    got = assess_coverage(_cases(tmp_path, row), parse_signature("f", signature, None))
    for question, (status, cases) in row["expect"].items():
        item = getattr(got, question)
        assert (question, item.status, list(item.cases)) == (question, status, cases)


def test_absent_is_never_upgraded_by_guessing(tmp_path):
    row = {"cases": [{"args": [5], "expect": 5}]}
    got = assess_coverage(_cases(tmp_path, row), parse_signature("f", None, None))
    assert got.wrong_type.status == "absent" and got.large.status == "absent"
    assert "no case has" in got.large.note
