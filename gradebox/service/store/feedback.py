"""Feedback on rows (accepted or not), and its counts joined to the rows it is about."""

from __future__ import annotations

import time
from typing import Literal

from gradebox.service.store.db import Database

__all__ = ["FeedbackGroup", "FeedbackTable", "Target"]

Target = Literal["grade", "run"]
"""What a feedback row is about: a synchronous grade or a run's sample."""

FeedbackGroup = tuple[str, str, str, bool, int]
"""``(verdict, judge, static, accepted, count)``: one group of feedback over its rows."""

_SELECT = """
SELECT json_extract(r.row, '$.verdict'),
       coalesce(json_extract(r.row, '$.judge.verdict'), json_extract(r.row, '$.judge.status'),
                'off'),
       coalesce(json_extract(r.row, '$.static.effect'), 'off'),
       f.accepted, count(*)
FROM feedback f JOIN {table} r ON {join}
WHERE f.created >= ? AND (? IS NULL OR f.owner = ?)
  AND (? IS NULL OR coalesce(json_extract(r.row, '$.task'), json_extract(r.row, '$.fn')) = ?)
GROUP BY 1, 2, 3, 4
"""
_ROWS = (
    _SELECT.format(table="grades", join="f.kind = 'grade' AND r.id = f.key")
    + "UNION ALL"
    + _SELECT.format(table="samples", join="f.kind = 'run' AND r.run_id = f.key AND r.idx = f.idx")
)
"""Feedback joined to the rows it is about (each by its primary key), grouped."""


class FeedbackTable(Database):
    """Feedback, one per row (a new one replaces the old)."""

    def put_feedback(
        self,
        kind: Target,
        key: str,
        idx: int,
        owner: str,
        *,
        accepted: bool,
        reviewer: str | None,
        note: str | None,
    ) -> float:
        """Store feedback on row ``(kind, key, idx)``; the time it was stored.

        Committed without waiting for the disk: a power cut may lose the last of it.
        """
        now = time.time()
        self._write_fast(
            "INSERT OR REPLACE INTO feedback "
            "(kind, key, idx, owner, accepted, reviewer, note, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (kind, key, idx, owner, int(accepted), reviewer, note, now),
        )
        return now

    def feedback_groups(
        self, *, owner: str | None, since: float, task: str | None
    ) -> list[FeedbackGroup]:
        """Feedback of ``owner`` (``None``: everyone's) since ``since``, grouped by its row."""
        args = (since, owner, owner, task, task)
        groups = self._all(_ROWS, args + args)
        return [(str(v), str(j), str(s), bool(a), int(c)) for v, j, s, a, c in groups]

    def sample_index(self, run_id: str, sample_id: str) -> int | None:
        """The index of the graded sample of run ``run_id`` with id ``sample_id``."""
        row = self._one(
            "SELECT idx FROM samples WHERE run_id = ? AND json_extract(sample, '$.id') = ? "
            "AND row IS NOT NULL",
            (run_id, sample_id),
        )
        return None if row is None else int(row[0])
