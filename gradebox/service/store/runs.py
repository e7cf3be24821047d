"""Runs and their samples: one row per sample, its result written once."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from gradebox.model import task_of
from gradebox.service.rows import StoredGrade
from gradebox.service.store import schema as storesql
from gradebox.service.store.db import Database, dump
from gradebox.service.store.records import QuotaExceeded, RubricPin, RunInfo, RunStatus

__all__ = ["RunTable"]


class RunTable(Database):
    """Queued runs, their samples and results, their pinned rubrics."""

    def add_run(
        self,
        run_id: str,
        owner: str,
        samples: Sequence[Mapping[str, object]],
        *,
        max_runs: int | None = None,
        max_samples: int | None = None,
        options: Mapping[str, object] | None = None,
        pin_rubric: Callable[[str], RubricPin] | None = None,
    ) -> None:
        """Store a run and all its samples in one transaction (all or nothing).

        The run is pinned to the current revision of each of its tasks and, with
        ``pin_rubric`` (a rubric name to its snapshot, read inside the transaction,
        so no task or rubric written meanwhile can slip between), to the rubric
        each of those revisions names.

        Raises:
            QuotaExceeded: ``owner`` would have more than ``max_runs`` unfinished runs
                or ``max_samples`` ungraded samples (checked inside the transaction,
                so concurrent submissions cannot both slip under a quota).
        """
        with self._transaction() as db:
            runs, waiting = self._queued_by(owner)
            if max_runs is not None and runs + 1 > max_runs:
                raise QuotaExceeded(f"at most {max_runs} unfinished runs per token")
            if max_samples is not None and waiting + len(samples) > max_samples:
                raise QuotaExceeded(f"at most {max_samples} ungraded samples per token")
            db.execute(
                "INSERT INTO runs (id, owner, status, created, total, options) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, owner, "queued", time.time(), len(samples), dump(options or {})),
            )
            db.executemany(
                "INSERT INTO samples (run_id, idx, sample) VALUES (?, ?, ?)",
                ((run_id, i, dump(s)) for i, s in enumerate(samples)),
            )
            # Pin the run to the revisions of its tasks now (replacing one later
            # does not change the cases this run is graded against).
            db.executemany(
                "INSERT INTO run_tasks (run_id, task, revision) "
                "SELECT ?, task, revision FROM tasks WHERE task = ?",
                ((run_id, t) for t in sorted({task_of(s) for s in samples})),
            )
            if pin_rubric is not None:
                self._pin_rubrics(run_id, pin_rubric)

    def _pin_rubrics(self, run_id: str, pin_rubric: Callable[[str], RubricPin]) -> None:
        """Pin a run's rubrics (in :meth:`add_run`'s transaction); drop unneeded snapshots."""
        tasks = self._db.execute(
            "SELECT run_tasks.task, task_revisions.public FROM run_tasks JOIN task_revisions "
            "ON task_revisions.task = run_tasks.task "
            "AND task_revisions.revision = run_tasks.revision WHERE run_tasks.run_id = ?",
            (run_id,),
        ).fetchall()
        pins: dict[str, RubricPin] = {}
        for task, public in tasks:
            name = str(json.loads(public).get("rubric") or "default")
            if name not in pins:
                pins[name] = pin_rubric(name)
            pin = pins[name]
            if pin.digest is not None:
                self._db.execute(
                    "INSERT OR IGNORE INTO rubric_snapshots (digest, texts) VALUES (?, ?)",
                    (pin.digest, dump(pin.texts)),
                )
            self._db.execute(
                "INSERT INTO run_rubrics (run_id, task, rubric, revision, digest) "
                "VALUES (?, ?, ?, ?, ?)",
                (run_id, task, pin.name, pin.revision, pin.digest),
            )
        self._db.execute(storesql.PRUNE_SNAPSHOTS, storesql.UNFINISHED)

    def run_rubric(self, run_id: str, task: str) -> RubricPin | None:
        """The rubric run ``run_id`` judges task ``task`` with (without its texts).

        ``None`` for a run submitted with the judge off, or from before rubrics were
        pinned: it is judged with the task's rubric as it is now.
        """
        row = self._one(
            "SELECT rubric, revision, digest FROM run_rubrics WHERE run_id = ? AND task = ?",
            (run_id, task),
        )
        return None if row is None else RubricPin(str(row[0]), int(row[1]), row[2])

    def rubric_texts(self, digest: str) -> dict[str, str] | None:
        """The texts of a pinned rubric snapshot (kept while an unfinished run needs it)."""
        row = self._one("SELECT texts FROM rubric_snapshots WHERE digest = ?", (digest,))
        return None if row is None else dict(json.loads(row[0]))

    def queued_by(self, owner: str) -> tuple[int, int]:
        """``(unfinished runs, ungraded samples in them)`` of one token."""
        with self._lock:
            return self._queued_by(owner)

    def _queued_by(self, owner: str) -> tuple[int, int]:
        row = self._db.execute(
            "SELECT count(*), coalesce(sum(total - (SELECT count(*) FROM samples "
            "WHERE run_id = runs.id AND row IS NOT NULL)), 0) "
            "FROM runs WHERE owner = ? AND status IN (?, ?)",
            (owner, *storesql.UNFINISHED),
        ).fetchone()
        return int(row[0]), int(row[1])

    def unfinished_runs(self) -> int:
        """How many runs are queued or running."""
        row = self._one("SELECT count(*) FROM runs WHERE status IN (?, ?)", storesql.UNFINISHED)
        return int(row[0]) if row else 0

    def queued_samples(self) -> int:
        """Samples of queued or running runs that have no result yet (all tokens)."""
        row = self._one(
            "SELECT count(*) FROM samples JOIN runs ON runs.id = samples.run_id "
            "WHERE runs.status IN (?, ?) AND samples.row IS NULL",
            storesql.UNFINISHED,
        )
        return int(row[0]) if row else 0

    def unfinished(self, now: float | None = None) -> list[tuple[str, str]]:
        """``(owner, run id)`` of every queued or running run whose token is live, oldest first.

        A run whose token was revoked or has expired (at ``now``, default: the time
        now) is left out: no new sample of it starts (:meth:`retire_orphaned`
        cancels it).
        """
        when = time.time() if now is None else now
        rows = self._all(
            "SELECT runs.owner, runs.id FROM runs JOIN tokens ON tokens.id = runs.owner "
            "WHERE runs.status IN (?, ?) AND (tokens.expires IS NULL OR tokens.expires > ?) "
            "ORDER BY runs.created, runs.rowid",
            (*storesql.UNFINISHED, when),
        )
        return [(str(owner), str(run_id)) for owner, run_id in rows]

    def retire_orphaned(self, now: float | None = None) -> list[tuple[str, str]]:
        """Cancel every unfinished run whose token was revoked or has expired.

        Returns:
            ``(run id, reason)`` of each run cancelled now; the reason is ``token
            revoked`` or ``token expired``. Results already stored stay.
        """
        when = time.time() if now is None else now
        found = self._all(storesql.ORPHANED, (*storesql.UNFINISHED, when))
        return [
            (str(run_id), str(reason))
            for run_id, reason in found
            if self.set_status(str(run_id), "cancelled", reason=str(reason))
        ]

    def next_pending(self, run_id: str, after: int) -> tuple[int, dict[str, Any]] | None:
        """The first sample of a run after index ``after`` that has no result yet."""
        row = self._one(
            "SELECT idx, sample FROM samples WHERE run_id = ? AND idx > ? AND row IS NULL "
            "ORDER BY idx LIMIT 1",
            (run_id, after),
        )
        return None if row is None else (int(row[0]), json.loads(row[1]))

    def run(self, run_id: str) -> RunInfo | None:
        """A run's status and progress."""
        row = self._one(
            "SELECT id, owner, status, created, finished, total, "
            "(SELECT count(*) FROM samples WHERE run_id = runs.id AND row IS NOT NULL), reason "
            "FROM runs WHERE id = ?",
            (run_id,),
        )
        return None if row is None else RunInfo(*row)

    def set_status(self, run_id: str, status: RunStatus, *, reason: str | None = None) -> bool:
        """Move an unfinished run to ``status`` (cancelled: with ``reason``); False if finished."""
        finished = time.time() if status in ("done", "cancelled") else None
        return (
            self._write(
                "UPDATE runs SET status = ?, finished = ?, reason = ? "
                "WHERE id = ? AND status IN (?, ?)",
                (status, finished, reason, run_id, *storesql.UNFINISHED),
            )
            == 1
        )

    def pending(self, run_id: str) -> list[tuple[int, dict[str, Any]]]:
        """The samples of a run that have no result yet, in order."""
        rows = self._all(
            "SELECT idx, sample FROM samples WHERE run_id = ? AND row IS NULL ORDER BY idx",
            (run_id,),
        )
        return [(int(i), json.loads(s)) for i, s in rows]

    def has_result(self, run_id: str, idx: int) -> bool:
        """Whether a sample already has its result."""
        row = self._one(
            "SELECT row IS NOT NULL FROM samples WHERE run_id = ? AND idx = ?", (run_id, idx)
        )
        return bool(row and row[0])

    def put_result(self, run_id: str, idx: int, stored: StoredGrade) -> bool:
        """Write (and commit) a sample's result once; False when it already had one."""
        return (
            self._write(
                "UPDATE samples SET row = ? WHERE run_id = ? AND idx = ? AND row IS NULL",
                (dump(stored.to_row()), run_id, idx),
            )
            == 1
        )

    def run_options(self, run_id: str) -> dict[str, object]:
        """The layer options a run was submitted with (``{}`` for an unknown run)."""
        row = self._one("SELECT options FROM runs WHERE id = ?", (run_id,))
        return {} if row is None else dict(json.loads(row[0]))

    def update_result(self, run_id: str, idx: int, stored: StoredGrade) -> bool:
        """Replace a sample's result (its deferred judgement arrived); False if it has none."""
        return (
            self._write(
                "UPDATE samples SET row = ? WHERE run_id = ? AND idx = ? AND row IS NOT NULL",
                (dump(stored.to_row()), run_id, idx),
            )
            == 1
        )

    def judge_pending(self, run_id: str) -> int:
        """How many of a run's results still wait for their deferred judgement."""
        row = self._one(
            f"SELECT count(*) FROM samples WHERE run_id = ? AND {storesql.PENDING}",  # noqa: S608
            (run_id,),
        )
        return int(row[0]) if row else 0
