"""The typed grade record: rows -> records -> rows give back the same bytes.

``tests/cases/golden/results.jsonl`` is a results file written by
``gradebox grade`` on ``examples/`` (static layers on, ``--explain`` for some
rows), plus an infrastructure-error row and a row with a scored judge. It is
the format's contract: if a change alters a single byte of a row, this fails.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gradebox.grade import Grade

GOLDEN = Path(__file__).resolve().parents[1] / "cases" / "golden" / "results.jsonl"


def _lines() -> list[str]:
    return GOLDEN.read_text(encoding="utf-8").splitlines()


def test_the_golden_file_covers_every_part():
    rows = [json.loads(line) for line in _lines()]
    assert {r["verdict"] for r in rows} == {"pass", "fail", "needs_review"}
    assert any(r["static"] and r["static"]["findings"] for r in rows)
    assert any(r["judge"] and r["judge"]["status"] == "scored" for r in rows)
    assert any("explain" in r for r in rows) and any("detail" in r for r in rows)
    assert any(r["gate"] is None for r in rows)


@pytest.mark.parametrize("line", _lines(), ids=lambda line: json.loads(line)["id"])
def test_rows_round_trip_byte_for_byte(line):
    grade = Grade.from_row(json.loads(line))
    assert json.dumps(grade.to_row()) == line


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("pass", True, "contradicts"),
        ("failed", [0], "contradicts"),
        ("outcomes", ["ok", "maybe"], "outcomes"),
        ("verdict", "great", "verdict"),
        ("reason", "because", "reason"),
        ("claim", "O(1)", "claim"),
        ("gate", {"syntax": "ok"}, "gate"),
        ("static", {"findings": []}, "static"),
        ("latency_ms", "fast", "could not convert|latency"),
    ],
)
def test_a_row_that_does_not_hold_together_is_refused(field, value, message):
    row = json.loads(next(line for line in _lines() if '"verdict": "fail"' in line))
    row[field] = value
    with pytest.raises(ValueError, match=message):
        Grade.from_row(row)


def test_a_missing_field_is_named():
    row = json.loads(_lines()[0])
    del row["claim"]
    with pytest.raises(ValueError, match="'claim'"):
        Grade.from_row(row)


def test_caps_hit_is_on_the_row_only_when_a_cap_was_hit():
    row = json.loads(next(line for line in _lines() if '"timeouts": [' in line))
    assert "caps_hit" not in row
    row["caps_hit"] = ["processes"]
    grade = Grade.from_row(row)
    assert grade.tests.caps_hit == ("processes",)
    assert grade.to_row()["caps_hit"] == ["processes"]
    row["caps_hit"] = ["patience"]
    with pytest.raises(ValueError, match="caps_hit"):
        Grade.from_row(row)
