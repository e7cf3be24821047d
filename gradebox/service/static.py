"""The static layers in the service: warm sessions, per-task settings, the CLI's stage.

A row's ``static`` field is built by the CLI's own :class:`~gradebox.pipeline.static.StaticStage`
(imports vs lockfile, metrics, diff size, policy, the same :class:`~gradebox.grade.StaticReport`),
so the same code under the same policy and lockfile gives the same JSON through
the API as through ``gradebox grade``. Only the tool layers (ruff, mypy, bandit)
run differently: in a warm :class:`static.batch.Session` (bandit in process,
mypy in a long-lived worker), one candidate at a time, instead of once per batch.
Sessions are built once at start-up (~2.5 s each) and shared as a small pool:
a session serialises its checks, so ``sessions`` bounds how many samples are
checked at once.

Per-task settings (:class:`TaskStatic`, ``"static"`` in ``PUT /v1/tasks/{fn}``)
replace the server's policy and lockfile for that task, and name the rule ids
the task legitimately needs (``allow_rules``: a task that asks for an MD5
digest allows bandit's ``B324``). An allowed rule's findings stay on the row;
they only never decide its effect (they are added to every selector's
``except_rules``).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import queue
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from gradebox.pipeline.core import Annotation, Graded
from gradebox.pipeline.static import StaticStage
from gradebox.pipeline.task_static import KEYS, LOCKFILE_NAMES, TaskStatic, allowing, task_static
from gradebox.service.problems import Problem
from static.batch import Candidate, Session, StaticConfig, StaticResult
from static.policy import DEFAULT_POLICY, Policy

__all__ = ["LOCKFILE_NAMES", "StaticService", "TaskStatic", "check_task_static"]


def check_task_static(body: Any, problems: list[Problem]) -> dict[str, Any]:
    """Check a task body's ``static`` object; return it for storage (problems appended)."""
    if body is None:
        return {}
    if not isinstance(body, dict):
        problems.append(Problem("/static", "must be an object"))
        return {}
    for key in body:
        if key not in KEYS:
            problems.append(
                Problem(f"/static/{key}", "unknown property; known: " + ", ".join(KEYS))
            )
    try:
        task_static(body)
    except ValueError as exc:
        where, _, message = str(exc).partition(": ")
        problems.append(Problem(f"/static/{where}", message[:300]))
    return dict(body)


class _WarmStage(StaticStage):
    """The CLI's static stage with the tool layers run in a warm session of the pool."""

    def __init__(self, sessions: _Sessions, config: StaticConfig, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self._sessions = sessions

    def _check(self, candidates: list[Candidate]) -> list[StaticResult]:
        with self._sessions.one() as session:
            return [session.check(c) for c in candidates]


class _Sessions:
    """A fixed set of warm sessions, each used by one thread at a time."""

    def __init__(self, sessions: list[Session]) -> None:
        self._all = sessions
        self._free: queue.SimpleQueue[Session] = queue.SimpleQueue()
        for s in sessions:
            self._free.put(s)

    @contextmanager
    def one(self) -> Iterator[Session]:
        session = self._free.get()
        try:
            yield session
        finally:
            self._free.put(session)

    def close(self) -> None:
        for s in self._all:
            s.close()


class StaticService:
    """Warm static sessions and the server's default policy and lockfile; thread-safe."""

    def __init__(
        self,
        *,
        sessions: int = 2,
        cache_dir: Path | None = None,
        policy: Policy = DEFAULT_POLICY,
        pins: dict[str, str] | None = None,
    ) -> None:
        """Start ``sessions`` warm sessions (each ~2.5 s, one mypy worker process).

        Args:
            sessions: How many samples may be checked at once.
            cache_dir: mypy's cache (each session keeps its own below it); ``None``
                keeps it in each session's scratch directory.
            policy: The server's policy (a task may replace it).
            pins: The server's lockfile pins; ``None`` lets the installed
                environment stand in (as ``gradebox grade`` without ``--lockfile``).

        Raises:
            static.findings.ToolError: A tool is missing or did not start.
        """
        self.config = StaticConfig(cache_dir=cache_dir, jobs=1)
        self.policy = policy
        self.pins = pins
        self.environment = importlib.metadata.packages_distributions()
        folders = [
            None if cache_dir is None else cache_dir / f"session-{i}"
            for i in range(max(1, sessions))
        ]
        # Each session warms mypy for a few seconds: start them side by side.
        with ThreadPoolExecutor(len(folders), thread_name_prefix="gradebox-static-start") as ex:
            futures = [
                ex.submit(Session, dataclasses.replace(self.config, cache_dir=folder))
                for folder in folders
            ]
        started = [f.result() for f in futures if f.exception() is None]
        failed = next((f.exception() for f in futures if f.exception() is not None), None)
        if failed is not None:
            for started_session in started:
                started_session.close()
            raise failed
        self._sessions = _Sessions(started)

    def stage(self, settings: Mapping[str, Any]) -> StaticStage:
        """The static stage for a task's stored settings (cheap; cache it per revision)."""
        task = task_static(settings)
        policy = allowing(task.policy or self.policy, task.allow_rules)
        pins = task.pins if task.pins is not None else self.pins
        return _WarmStage(
            self._sessions, self.config, policy=policy, pins=pins, environment=self.environment
        )

    @staticmethod
    def annotate(stage: StaticStage, graded: Graded) -> Annotation:
        """The sample's static annotation, exactly as the CLI's stage makes it."""
        try:
            return stage.run([graded])[0]
        except Exception as exc:  # as the pipeline does: an infra error on the row
            message = f"static stage error: {type(exc).__name__}"
            return stage.crashed([graded], message)[0]

    def close(self) -> None:
        """Stop every session's mypy worker."""
        self._sessions.close()
