"""The stored grade: one frozen record in, the same bytes out as the service always wrote.

``tests/cases/service/before_task_ids.sqlite`` holds rows the service wrote before
:class:`~gradebox.service.rows.StoredGrade` existed (and before task ids); every one
reads back as a stored grade and writes the same bytes. Rows over the size cap are
compared with the cap the service applied to dict rows before (kept here as the
reference: :func:`_old_cap`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from gradebox.grade import MAX_TEXT, Grade
from gradebox.service.rows import INFRA_MESSAGE, StoredGrade, shown
from gradebox.service.store.db import dump

FIXTURE = Path(__file__).resolve().parents[2] / "cases" / "service" / "before_task_ids.sqlite"


def _stored_texts() -> list[str]:
    db = sqlite3.connect(f"file:{FIXTURE}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT row FROM samples WHERE row IS NOT NULL").fetchall()
        rows += db.execute("SELECT row FROM grades").fetchall()
    finally:
        db.close()
    return [str(r[0]) for r in rows]


def _old_cap(row: dict[str, Any], max_bytes: int, disclosure: str) -> dict[str, Any]:
    """What the service stored before: ``cap_row`` then the disclosure, on a dict row."""
    size = lambda r: len(json.dumps(r, ensure_ascii=False).encode())  # noqa: E731
    for key, value in list(row.items()):
        if isinstance(value, str) and len(value) > MAX_TEXT:
            row[key] = value[:MAX_TEXT]
    if size(row) > max_bytes:
        for key in ("static", "judge", "explain", "counterexample", "failed", "timeouts",
                    "outcomes"):  # fmt: skip
            if row.get(key):
                row[key] = None
                row["truncated"] = True
                if size(row) <= max_bytes:
                    break
        else:
            kept = ("id", "task", "fn", "pass", "verdict", "reason")
            row = {k: row.get(k) for k in kept if k in row} | {"truncated": True}
    row["disclosure"] = disclosure or "verdict"
    return row


def _a_grade(outcomes: int = 5) -> Grade:
    first = json.loads(_stored_texts()[1])
    grade = Grade.from_row(first)
    tests = dataclasses.replace(
        grade.tests, outcomes=("ok", "wrong", "timeout") * outcomes, detail="d" * 900
    )
    return dataclasses.replace(grade, tests=tests, id="s" * 700)


def test_every_row_stored_before_reads_back_as_the_same_bytes():
    texts = _stored_texts()
    assert len(texts) >= 10
    assert any('"task":' not in t for t in texts)  # rows from before task ids
    for text in texts:
        stored = StoredGrade.from_row(json.loads(text))
        assert dump(stored.to_row()) == text


@pytest.mark.parametrize("max_bytes", [100_000, 2_000, 900, 300])
def test_a_capped_grade_is_the_row_the_service_stored_before(max_bytes):
    grade = _a_grade(outcomes=200)
    stored = StoredGrade.capped(grade, "counts", max_bytes, task_revision=3)
    stored = dataclasses.replace(stored, rubric_revision=0)
    before = _old_cap(grade.to_row(), max_bytes, "counts") | {"task_revision": 3}
    before["rubric_revision"] = 0
    assert dump(stored.to_row()) == dump(before)
    back = StoredGrade.from_row(json.loads(dump(stored.to_row())))
    assert dump(back.to_row()) == dump(before)
    assert back.cut == stored.cut and back.minimal == stored.minimal
    assert (max_bytes < 100_000) == bool(stored.to_row().get("truncated"))


def test_an_infra_message_is_the_fixed_one_and_the_cause_is_logged(caplog):
    grade = _a_grade()
    broken = dataclasses.replace(
        grade, tests=dataclasses.replace(grade.tests, infra_error="x" * 900)
    )
    with caplog.at_level(logging.WARNING, logger="gradebox.service"):
        stored = StoredGrade.capped(broken, "", 100_000)
    row = stored.to_row()
    assert row["infra_error"] == INFRA_MESSAGE and row["disclosure"] == "verdict"
    assert "task_revision" not in row
    assert any("x" * 100 in r.getMessage() for r in caplog.records)


def test_a_stored_grade_is_frozen_and_shown_as_its_row():
    stored = StoredGrade.capped(_a_grade(), "counts", 100_000, task_revision=1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        stored.disclosure = "cases"  # type: ignore[misc]
    assert shown(stored, admin=True) == stored.to_row()
    assert shown(stored, admin=False) == shown(stored.to_row(), admin=False)
    assert "outcomes" not in shown(stored, admin=False)


def test_a_row_that_is_not_a_stored_grade_is_refused():
    row = json.loads(_stored_texts()[0])
    with pytest.raises(ValueError, match="disclosure"):
        StoredGrade.from_row(row | {"disclosure": "everything"})
    with pytest.raises(ValueError, match="task_revision"):
        StoredGrade.from_row(row | {"task_revision": "2"})
