"""The row's ``kind``: present only for stdio and program tasks, and read back exactly."""

from __future__ import annotations

import json

import pytest

from gradebox.grade import GateReport, Grade, TestsReport
from gradebox.verdict import Verdict


def _grade(kind: str | None) -> Grade:
    tests = TestsReport(
        outcomes=("ok", "wrong"),
        gate=GateReport("ok", (), "ok"),
        claim="none",
        latency_ms=3.5,
        kind=kind,  # type: ignore[arg-type]
    )
    return Grade("s1", "f", Verdict("fail", "hidden_tests"), tests)


def test_function_rows_have_no_kind_field() -> None:
    row = _grade(None).to_row()
    assert "kind" not in row
    assert Grade.from_row(row) == _grade(None)


@pytest.mark.parametrize("kind", ["stdio", "program"])
def test_kind_round_trips_byte_for_byte(kind: str) -> None:
    row = _grade(kind).to_row()
    assert row["kind"] == kind
    text = json.dumps(row)
    assert json.dumps(Grade.from_row(json.loads(text)).to_row()) == text


def test_an_unknown_kind_is_refused() -> None:
    row = _grade("program").to_row()
    row["kind"] = "function"  # function tasks say nothing; anything else is not a kind
    with pytest.raises(ValueError, match="kind"):
        Grade.from_row(row)
