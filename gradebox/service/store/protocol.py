"""The store's interface: what the API and the engine call, typed (the seam of another store).

:class:`~gradebox.service.store.sqlite.Store` (SQLite) implements it; a
PostgreSQL store would implement the same methods. Nothing above the store
writes SQL: it calls these.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from gradebox.service.rows import StoredGrade
from gradebox.service.store.feedback import FeedbackGroup, Target
from gradebox.service.store.gates import GateRecord, RepoRecord
from gradebox.service.store.records import (
    RubricPin,
    RunInfo,
    RunStatus,
    StoredTask,
    TokenInfo,
    TokenRecord,
)

__all__ = ["GradeStore"]


class GradeStore(Protocol):
    """Durable state of the service: tokens, tasks, runs, grades, rubrics, feedback, gates."""

    def close(self) -> None:
        """Close the connection."""

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

    def token(self, token_id: str) -> TokenRecord | None:
        """The token with this id, if any."""

    def tokens(self) -> list[TokenInfo]:
        """Every token, oldest first (never a hash)."""

    def revoke_token(self, token_id: str) -> bool:
        """Delete a token: its next request fails; a running server cancels its queued runs."""

    def token_live(self, token_id: str, now: float | None = None) -> bool:
        """Whether a token exists and has not expired (at ``now``, default: the time now)."""

    def has_admin(self) -> bool:
        """Whether any admin token exists."""

    def put_task(
        self,
        task: str,
        public: Mapping[str, object],
        hidden: Sequence[Mapping[str, object]],
        limits: Mapping[str, object],
        disclosure: str = "counts",
        static: Mapping[str, object] | None = None,
    ) -> int:
        """Register or replace a task; return its new revision."""

    def task(self, task: str, revision: int | None = None) -> StoredTask | None:
        """Task ``task`` (an id) at ``revision`` (default: the current one), with its cases."""

    def run_revision(self, run_id: str, task: str) -> int | None:
        """The revision of task ``task`` that run ``run_id`` grades against."""

    def task_summary(self, task: str) -> dict[str, object] | None:
        """A task's public part, limits, revision and number of cases (never the cases)."""

    def task_revision(self, task: str) -> int | None:
        """The current revision of a task, or ``None`` when it is not registered."""

    def task_names(self, tasks: set[str]) -> dict[str, str]:
        """Which of ``tasks`` (ids) are registered, with the entry point of each."""

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
        """Store a run and all its samples in one transaction (all or nothing)."""

    def run_rubric(self, run_id: str, task: str) -> RubricPin | None:
        """The rubric run ``run_id`` judges task ``task`` with (without its texts)."""

    def rubric_texts(self, digest: str) -> dict[str, str] | None:
        """The texts of a pinned rubric snapshot (kept while an unfinished run needs it)."""

    def queued_by(self, owner: str) -> tuple[int, int]:
        """``(unfinished runs, ungraded samples in them)`` of one token."""

    def unfinished_runs(self) -> int:
        """How many runs are queued or running."""

    def queued_samples(self) -> int:
        """Samples of queued or running runs that have no result yet (all tokens)."""

    def unfinished(self, now: float | None = None) -> list[tuple[str, str]]:
        """``(owner, run id)`` of every queued or running run whose token is live, oldest first."""

    def retire_orphaned(self, now: float | None = None) -> list[tuple[str, str]]:
        """Cancel every unfinished run whose token was revoked or has expired."""

    def next_pending(self, run_id: str, after: int) -> tuple[int, dict[str, Any]] | None:
        """The first sample of a run after index ``after`` that has no result yet."""

    def run(self, run_id: str) -> RunInfo | None:
        """A run's status and progress."""

    def set_status(self, run_id: str, status: RunStatus, *, reason: str | None = None) -> bool:
        """Move an unfinished run to ``status`` (cancelled: with ``reason``); False if finished."""

    def pending(self, run_id: str) -> list[tuple[int, dict[str, Any]]]:
        """The samples of a run that have no result yet, in order."""

    def has_result(self, run_id: str, idx: int) -> bool:
        """Whether a sample already has its result."""

    def put_result(self, run_id: str, idx: int, stored: StoredGrade) -> bool:
        """Write (and commit) a sample's result once; False when it already had one."""

    def run_options(self, run_id: str) -> dict[str, object]:
        """The layer options a run was submitted with (``{}`` for an unknown run)."""

    def update_result(self, run_id: str, idx: int, stored: StoredGrade) -> bool:
        """Replace a sample's result (its deferred judgement arrived); False if it has none."""

    def judge_pending(self, run_id: str) -> int:
        """How many of a run's results still wait for their deferred judgement."""

    def put_grade(self, grade_id: str, owner: str, stored: StoredGrade) -> None:
        """Store a synchronous grade under its id."""

    def update_grade(self, grade_id: str, stored: StoredGrade) -> bool:
        """Replace a grade (its deferred judgement arrived)."""

    def grade(self, grade_id: str) -> tuple[str, StoredGrade] | None:
        """``(owner, grade)`` of a synchronous grade."""

    def pending_judgements(self) -> list[tuple[str, str, int, StoredGrade]]:
        """Every stored grade still marked ``judge.status: pending``."""

    def results(self, run_id: str, *, page: int = 500) -> Iterator[StoredGrade]:
        """The finished results of a run in sample order, read a page at a time."""

    def rubric(self, name: str) -> tuple[str, int, float] | None:
        """A stored rubric's ``(text, revision, updated)``, or ``None``."""

    def put_rubric(self, name: str, text: str, revision: int) -> None:
        """Store ``text`` as revision ``revision`` of rubric ``name`` (the caller counts)."""

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
        """Store feedback on row ``(kind, key, idx)``; the time it was stored."""

    def feedback_groups(
        self, *, owner: str | None, since: float, task: str | None
    ) -> list[FeedbackGroup]:
        """Feedback of ``owner`` (``None``: everyone's) since ``since``, grouped by its row."""

    def sample_index(self, run_id: str, sample_id: str) -> int | None:
        """The index of the graded sample of run ``run_id`` with id ``sample_id``."""

    def open_gates(self) -> None:
        """Make the tables when missing, and queue again gates a stop left running."""

    def is_open(self) -> bool:
        """Whether the store is still open (closed: its app stopped)."""

    def put_repo(
        self, name: str, path: str, lockfile: str | None, protect: list[str] | None
    ) -> None:
        """Register (or replace) repository ``name``."""

    def repo(self, name: str) -> RepoRecord | None:
        """A registered repository, or ``None``."""

    def unfinished_gates(self, owner: str) -> int:
        """How many gates of ``owner`` are not done."""

    def add_gate(self, gate_id: str, owner: str, repo: str, spec: str) -> None:
        """Queue gate ``gate_id`` (``spec``: its JSON)."""

    def queued_gates(self) -> list[tuple[str, str]]:
        """``(gate id, owner)`` of every queued gate, oldest first."""

    def gate_spec(self, gate_id: str) -> str | None:
        """A gate's spec (JSON), or ``None``."""

    def start_gate(self, gate_id: str) -> None:
        """Mark a gate running."""

    def finish_gate(self, gate_id: str, row: str, *, only_queued: bool = False) -> None:
        """Mark a gate done with its row (JSON); ``only_queued``: if it is still queued."""

    def gate(self, gate_id: str) -> GateRecord | None:
        """A gate, or ``None``."""
