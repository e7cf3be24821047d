"""Durable state in one SQLite file (WAL): tokens, tasks, runs and per-sample results.

Each sample of a run is one row of ``samples`` keyed by ``(run_id, idx)``; its
result is a column of that row, written once (``... WHERE row IS NULL``) and
committed as soon as the sample is graded. So a run killed at any moment keeps
every finished result, a resumed run grades only the samples without a result,
and no sample can ever have two results.

Hidden cases are stored here and read only by the grader (:meth:`Store.task`);
nothing that serves a client reads that column.

Two connections, each behind its own lock: one writes (``synchronous=FULL``:
a committed result survives a power cut, at the price of an fsync per commit,
~5 ms here), one reads. Reads (a token on every request, a task's revision on
every grade) so never wait behind another thread's fsync; WAL lets them see
every committed write. Rows of synchronous grades, which their client already
holds, and feedback commit with ``synchronous=NORMAL`` (:meth:`Store.write_fast`):
they survive a crash of the process, and a power cut may lose the last of them.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from gradebox.model import task_of
from gradebox.service import storesql
from gradebox.service.records import (
    QuotaExceeded,
    RubricPin,
    RunInfo,
    RunStatus,
    StoredTask,
    TokenInfo,
    TokenRecord,
    iso_time,
)

__all__ = [
    "QuotaExceeded",
    "RubricPin",
    "RunInfo",
    "RunStatus",
    "Store",
    "StoredTask",
    "TokenInfo",
    "TokenRecord",
    "iso_time",
]


class Store:
    """The service's SQLite database."""

    def __init__(self, path: Path) -> None:
        """Open (creating when missing) the database at ``path`` in WAL mode."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            # FULL: a committed result survives a power cut too, not only a kill -9.
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._db.executescript(storesql.SCHEMA)
            self._migrate()
        self._reader = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._reader.execute("PRAGMA busy_timeout=10000")
        self._read_lock = threading.Lock()

    def _migrate(self) -> None:
        """Bring an older database to this schema, in one transaction; every row stays.

        Adds the columns it lacks (``storesql.MIGRATIONS``), with their defaults, and
        renames the task columns of databases from before task ids (``storesql.RENAMES``).
        """
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for table, column, sql in storesql.MIGRATIONS:
                if column not in self._columns(table):
                    self._db.execute(sql)
            for table, old, new in storesql.RENAMES:
                columns = self._columns(table)
                if old in columns and new not in columns:
                    self._db.execute(f"ALTER TABLE {table} RENAME COLUMN {old} TO {new}")
            self._db.execute(storesql.BACKFILL_REVISIONS)
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def _columns(self, table: str) -> set[str]:
        return {row[1] for row in self._db.execute(f"PRAGMA table_info({table})")}

    def close(self) -> None:
        """Close the connection."""
        with self._read_lock:
            self._reader.close()
        with self._lock:
            self._db.close()

    def fetch_one(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        """One row of a query (for the tables of :mod:`.rubricdata` and :mod:`.feedback`)."""
        return self._one(sql, args)

    def fetch_all(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Every row of a query."""
        return self._all(sql, args)

    def execute(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        """Run one statement (committed at once); the number of rows it changed."""
        return self._write(sql, args)

    def write_fast(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        """Run one statement, committed without waiting for the disk (``synchronous=NORMAL``).

        For rows a client already holds (synchronous grades) and feedback: they
        survive a crash of the process; a power cut may lose the last of them.
        """
        with self._lock:
            self._db.execute("PRAGMA synchronous=NORMAL")
            try:
                return self._db.execute(sql, args).rowcount
            finally:
                self._db.execute("PRAGMA synchronous=FULL")

    def _one(self, sql: str, args: tuple[Any, ...] = ()) -> tuple[Any, ...] | None:
        with self._read_lock:
            row: tuple[Any, ...] | None = self._reader.execute(sql, args).fetchone()
            return row

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._read_lock:
            return self._reader.execute(sql, args).fetchall()

    def _write(self, sql: str, args: tuple[Any, ...] = ()) -> int:
        with self._lock:
            return self._db.execute(sql, args).rowcount

    # ------------------------------------------------------------------ tokens

    def add_token(
        self,
        token_id: str,
        role: str,
        token_hash: str,
        *,
        expires: float | None = None,
        tasks: frozenset[str] | None = None,
    ) -> None:
        """Store a new token's hash, its expiry and its task scope."""
        scope = None if tasks is None else _dump(sorted(tasks))
        self._write(
            "INSERT INTO tokens (id, role, hash, created, expires, tasks) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            (token_id, role, token_hash, time.time(), expires, scope),
        )

    def token(self, token_id: str) -> TokenRecord | None:
        """The token with this id, if any."""
        row = self._one(
            "SELECT id, role, hash, expires, tasks FROM tokens WHERE id = ?", (token_id,)
        )
        if row is None:
            return None
        tasks = None if row[4] is None else frozenset(json.loads(row[4]))
        return TokenRecord(row[0], row[1], row[2], row[3], tasks)

    def tokens(self) -> list[TokenInfo]:
        """Every token, oldest first (never a hash)."""
        rows = self._all(
            "SELECT id, role, created, expires, tasks FROM tokens ORDER BY created, id"
        )
        return [
            TokenInfo(
                str(r[0]),
                r[1],
                float(r[2]),
                None if r[3] is None else float(r[3]),
                None if r[4] is None else tuple(json.loads(r[4])),
            )
            for r in rows
        ]

    def revoke_token(self, token_id: str) -> bool:
        """Delete a token: its next request fails; a running server cancels its queued runs.

        Written from any process (``gradebox token revoke`` beside a running server):
        the server reads tokens from this database on every request and before it
        starts each sample (:meth:`unfinished`, :meth:`retire_orphaned`).
        """
        return self._write("DELETE FROM tokens WHERE id = ?", (token_id,)) > 0

    def token_live(self, token_id: str, now: float | None = None) -> bool:
        """Whether a token exists and has not expired (at ``now``, default: the time now)."""
        when = time.time() if now is None else now
        row = self._one(
            "SELECT 1 FROM tokens WHERE id = ? AND (expires IS NULL OR expires > ?)",
            (token_id, when),
        )
        return row is not None

    def has_admin(self) -> bool:
        """Whether any admin token exists."""
        return self._one("SELECT 1 FROM tokens WHERE role = 'admin' LIMIT 1") is not None

    # ------------------------------------------------------------------- tasks

    def put_task(
        self,
        task: str,
        public: dict[str, Any],
        hidden: list[dict[str, Any]],
        limits: dict[str, Any],
        disclosure: str = "counts",
        static: dict[str, Any] | None = None,
    ) -> int:
        """Register or replace a task; return its new revision.

        The new revision is also kept in ``task_revisions``, beside those that
        unfinished runs still grade against (a run keeps the revision it started
        with); other old revisions are deleted.
        """
        values = (
            _dump(public),
            _dump(hidden),
            _dump(limits),
            disclosure,
            _dump(static or {}),
            time.time(),
        )
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                old = self._db.execute(
                    "SELECT revision FROM tasks WHERE task = ?", (task,)
                ).fetchone()
                revision = 1 if old is None else old[0] + 1
                self._db.execute(
                    "INSERT OR REPLACE INTO tasks "
                    "(task, public, hidden, limits, disclosure, static, updated, revision) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (task, *values, revision),
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO task_revisions "
                    "(task, public, hidden, limits, disclosure, static, updated, revision) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (task, *values, revision),
                )
                self._db.execute(
                    storesql.PRUNE_REVISIONS, (task, revision, task, *storesql.UNFINISHED)
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
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

    def task_summary(self, task: str) -> dict[str, Any] | None:
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

    # -------------------------------------------------------------------- runs

    def add_run(
        self,
        run_id: str,
        owner: str,
        samples: list[dict[str, Any]],
        *,
        max_runs: int | None = None,
        max_samples: int | None = None,
        options: dict[str, Any] | None = None,
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
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                runs, waiting = self._queued_by(owner)
                if max_runs is not None and runs + 1 > max_runs:
                    raise QuotaExceeded(f"at most {max_runs} unfinished runs per token")
                if max_samples is not None and waiting + len(samples) > max_samples:
                    raise QuotaExceeded(f"at most {max_samples} ungraded samples per token")
                self._db.execute(
                    "INSERT INTO runs (id, owner, status, created, total, options) "
                    "VALUES (?, ?, ?, ?, ?, ?)",
                    (run_id, owner, "queued", time.time(), len(samples), _dump(options or {})),
                )
                self._db.executemany(
                    "INSERT INTO samples (run_id, idx, sample) VALUES (?, ?, ?)",
                    ((run_id, i, _dump(s)) for i, s in enumerate(samples)),
                )
                # Pin the run to the revisions of its tasks now (replacing one later
                # does not change the cases this run is graded against).
                self._db.executemany(
                    "INSERT INTO run_tasks (run_id, task, revision) "
                    "SELECT ?, task, revision FROM tasks WHERE task = ?",
                    ((run_id, t) for t in sorted({task_of(s) for s in samples})),
                )
                if pin_rubric is not None:
                    self._pin_rubrics(run_id, pin_rubric)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

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
                    (pin.digest, _dump(pin.texts)),
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

    def put_result(self, run_id: str, idx: int, row: dict[str, Any]) -> bool:
        """Write (and commit) a sample's result once; False when it already had one."""
        return (
            self._write(
                "UPDATE samples SET row = ? WHERE run_id = ? AND idx = ? AND row IS NULL",
                (_dump(row), run_id, idx),
            )
            == 1
        )

    def run_options(self, run_id: str) -> dict[str, Any]:
        """The layer options a run was submitted with (``{}`` for an unknown run)."""
        row = self._one("SELECT options FROM runs WHERE id = ?", (run_id,))
        return {} if row is None else dict(json.loads(row[0]))

    def update_result(self, run_id: str, idx: int, row: dict[str, Any]) -> bool:
        """Replace a sample's result (its deferred judgement arrived); False if it has none."""
        return (
            self._write(
                "UPDATE samples SET row = ? WHERE run_id = ? AND idx = ? AND row IS NOT NULL",
                (_dump(row), run_id, idx),
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

    # ------------------------------------------------------------------ grades

    def put_grade(self, grade_id: str, owner: str, row: dict[str, Any]) -> None:
        """Store a synchronous grade's row under its id."""
        self.write_fast(
            "INSERT INTO grades (id, owner, created, row) VALUES (?, ?, ?, ?)",
            (grade_id, owner, time.time(), _dump(row)),
        )

    def update_grade(self, grade_id: str, row: dict[str, Any]) -> bool:
        """Replace a grade's row (its deferred judgement arrived)."""
        return (
            self.write_fast("UPDATE grades SET row = ? WHERE id = ?", (_dump(row), grade_id)) == 1
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


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
