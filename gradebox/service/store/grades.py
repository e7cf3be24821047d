"""Synchronous grades (committed without waiting for the disk: the client holds them).

Rows go in and come out as :class:`~gradebox.service.rows.StoredGrade`; the
column holds :meth:`~gradebox.service.rows.StoredGrade.to_row` as JSON.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

from gradebox.service.rows import StoredGrade
from gradebox.service.store import schema as storesql
from gradebox.service.store.db import Database, dump

__all__ = ["GradeTable"]


class GradeTable(Database):
    """Synchronous grades by id, with their owner."""

    def put_grade(self, grade_id: str, owner: str, stored: StoredGrade) -> None:
        """Store a synchronous grade under its id."""
        self._write_fast(
            "INSERT INTO grades (id, owner, created, row) VALUES (?, ?, ?, ?)",
            (grade_id, owner, time.time(), dump(stored.to_row())),
        )

    def update_grade(self, grade_id: str, stored: StoredGrade) -> bool:
        """Replace a grade (its deferred judgement arrived)."""
        text = dump(stored.to_row())
        return self._write_fast("UPDATE grades SET row = ? WHERE id = ?", (text, grade_id)) == 1

    def grade(self, grade_id: str) -> tuple[str, StoredGrade] | None:
        """``(owner, grade)`` of a synchronous grade."""
        row = self._one("SELECT owner, row FROM grades WHERE id = ?", (grade_id,))
        if row is None:
            return None
        return str(row[0]), StoredGrade.from_row(json.loads(row[1]), grade_id=grade_id)

    def pending_judgements(self) -> list[tuple[str, str, int, StoredGrade]]:
        """Every stored row still marked ``judge.status: pending``.

        Returns:
            ``("grade", grade id, -1, row)`` and ``("run", run id, index, row)`` items.
        """
        grades = self._all(f"SELECT id, row FROM grades WHERE {storesql.PENDING}")  # noqa: S608
        samples = self._all(f"SELECT run_id, idx, row FROM samples WHERE {storesql.PENDING}")  # noqa: S608
        return [
            ("grade", str(g), -1, StoredGrade.from_row(json.loads(r), grade_id=str(g)))
            for g, r in grades
        ] + [("run", str(r), int(i), StoredGrade.from_row(json.loads(x))) for r, i, x in samples]

    def results(self, run_id: str, *, page: int = 500) -> Iterator[StoredGrade]:
        """The finished results of a run in sample order, read a page at a time."""
        last = -1
        while True:
            rows = self._all(
                "SELECT idx, row FROM samples WHERE run_id = ? AND idx > ? AND row IS NOT NULL "
                "ORDER BY idx LIMIT ?",
                (run_id, last, page),
            )
            for idx, text in rows:
                last = int(idx)
                yield StoredGrade.from_row(json.loads(text))
            if len(rows) < page:
                return
