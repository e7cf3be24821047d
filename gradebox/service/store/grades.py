"""Rows of synchronous grades (committed without waiting for the disk: the client holds them)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping
from typing import Any

from gradebox.service.store import schema as storesql
from gradebox.service.store.db import Database, dump

__all__ = ["GradeTable"]


class GradeTable(Database):
    """Synchronous grades by id, with their owner."""

    def put_grade(self, grade_id: str, owner: str, row: Mapping[str, object]) -> None:
        """Store a synchronous grade's row under its id."""
        self._write_fast(
            "INSERT INTO grades (id, owner, created, row) VALUES (?, ?, ?, ?)",
            (grade_id, owner, time.time(), dump(row)),
        )

    def update_grade(self, grade_id: str, row: Mapping[str, object]) -> bool:
        """Replace a grade's row (its deferred judgement arrived)."""
        return (
            self._write_fast("UPDATE grades SET row = ? WHERE id = ?", (dump(row), grade_id)) == 1
        )

    def grade(self, grade_id: str) -> tuple[str, dict[str, Any]] | None:
        """``(owner, row)`` of a synchronous grade."""
        row = self._one("SELECT owner, row FROM grades WHERE id = ?", (grade_id,))
        return None if row is None else (str(row[0]), json.loads(row[1]))

    def pending_judgements(self) -> list[tuple[str, str, int, dict[str, Any]]]:
        """Every stored row still marked ``judge.status: pending``.

        Returns:
            ``("grade", grade id, -1, row)`` and ``("run", run id, index, row)`` items.
        """
        grades = self._all(f"SELECT id, row FROM grades WHERE {storesql.PENDING}")  # noqa: S608
        samples = self._all(f"SELECT run_id, idx, row FROM samples WHERE {storesql.PENDING}")  # noqa: S608
        return [("grade", str(g), -1, json.loads(r)) for g, r in grades] + [
            ("run", str(r), int(i), json.loads(x)) for r, i, x in samples
        ]

    def results(self, run_id: str, *, page: int = 500) -> Iterator[dict[str, Any]]:
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
                yield json.loads(text)
            if len(rows) < page:
                return
