"""The tasks and their revisions (hidden cases are read by the grader only)."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence

from gradebox.service.store import schema as storesql
from gradebox.service.store.db import Database, dump
from gradebox.service.store.records import StoredTask

__all__ = ["TaskTable"]


class TaskTable(Database):
    """Tasks by id, each revision kept while a run grades against it."""

    def put_task(
        self,
        task: str,
        public: Mapping[str, object],
        hidden: Sequence[Mapping[str, object]],
        limits: Mapping[str, object],
        disclosure: str = "counts",
        static: Mapping[str, object] | None = None,
    ) -> int:
        """Register or replace a task; return its new revision.

        The new revision is also kept in ``task_revisions``, beside those that
        unfinished runs still grade against (a run keeps the revision it started
        with); other old revisions are deleted.
        """
        values = (
            dump(public),
            dump(hidden),
            dump(limits),
            disclosure,
            dump(static or {}),
            time.time(),
        )
        with self._transaction() as db:
            old = db.execute("SELECT revision FROM tasks WHERE task = ?", (task,)).fetchone()
            revision = 1 if old is None else old[0] + 1
            db.execute(
                "INSERT OR REPLACE INTO tasks "
                "(task, public, hidden, limits, disclosure, static, updated, revision) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (task, *values, revision),
            )
            db.execute(
                "INSERT OR REPLACE INTO task_revisions "
                "(task, public, hidden, limits, disclosure, static, updated, revision) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (task, *values, revision),
            )
            db.execute(storesql.PRUNE_REVISIONS, (task, revision, task, *storesql.UNFINISHED))
        return revision

    def task(self, task: str, revision: int | None = None) -> StoredTask | None:
        """Task ``task`` (an id) at ``revision`` (default: the current one), with its cases.

        For the grader only. ``None`` when the task, or that revision of it, is gone.
        """
        if revision is None:
            revision = self.task_revision(task)
            if revision is None:
                return None
        row = self._one(
            "SELECT task, public, hidden, limits, revision, updated, disclosure, static "
            "FROM task_revisions WHERE task = ? AND revision = ?",
            (task, revision),
        )
        if row is None:
            return None
        return StoredTask(
            row[0],
            json.loads(row[1]),
            json.loads(row[2]),
            json.loads(row[3]),
            row[4],
            row[5],
            row[6],
            json.loads(row[7]),
        )

    def run_revision(self, run_id: str, task: str) -> int | None:
        """The revision of task ``task`` that run ``run_id`` grades against.

        ``None`` for a run from before revisions were pinned: it grades against the
        current one.
        """
        row = self._one(
            "SELECT revision FROM run_tasks WHERE run_id = ? AND task = ?", (run_id, task)
        )
        return None if row is None else int(row[0])

    def task_summary(self, task: str) -> dict[str, object] | None:
        """A task's public part, limits, revision and number of cases (never the cases)."""
        row = self._one(
            "SELECT task, public, json_array_length(hidden), limits, revision, updated, "
            "disclosure, static FROM tasks WHERE task = ?",
            (task,),
        )
        if row is None:
            return None
        public = json.loads(row[1])
        return {
            "task": row[0],
            "fn": public.get("fn", row[0]),
            "public": public,
            "cases": row[2],
            "limits": json.loads(row[3]),
            "revision": row[4],
            "updated": row[5],
            "disclosure": row[6],
            "static": json.loads(row[7]),
        }

    def task_revision(self, task: str) -> int | None:
        """The current revision of a task, or ``None`` when it is not registered."""
        row = self._one("SELECT revision FROM tasks WHERE task = ?", (task,))
        return None if row is None else int(row[0])

    def task_names(self, tasks: set[str]) -> dict[str, str]:
        """Which of ``tasks`` (ids) are registered, with the entry point of each."""
        found: dict[str, str] = {}
        names = sorted(tasks)
        for start in range(0, len(names), 500):  # SQLite caps bound parameters
            part = names[start : start + 500]
            marks = ",".join("?" * len(part))
            sql = (
                "SELECT task, coalesce(json_extract(public, '$.fn'), task) FROM tasks "  # noqa: S608
                f"WHERE task IN ({marks})"
            )
            found.update((r[0], str(r[1])) for r in self._all(sql, tuple(part)))
        return found
