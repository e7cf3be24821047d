"""The static layers in the service: warm sessions, per-task settings, the CLI's stage.

A row's ``static`` field is built by the CLI's own :class:`~gradebox.pipeline.static.StaticStage`
(imports vs lockfile, metrics, diff size, policy, the same :class:`~gradebox.grade.StaticReport`),
so the same code under the same policy and lockfile gives the same JSON through
the API as through ``gradebox grade``. Only the tool layers (ruff, mypy, bandit)
run differently: in warm :class:`static.batch.WarmTools` (mypy and bandit in
long-lived worker processes), built once at start-up and shared as a small pool
(``sessions`` of them: batches checked at once).

Samples arriving together are checked together (:class:`_Batcher`): ruff, mypy
and bandit start once per batch instead of once per sample, which is what
makes a burst cheap (on this machine a batch of 8 costs ~35 ms a sample against
~160 ms for one alone). No thread waits to fill a batch: a sample whose caller
finds a free session is checked at once, with whatever else is waiting. A batch
holds the samples of **one token only** (the batch key, :data:`BATCH_KEY`): a
sample that makes a tool slow, or time out (which marks its whole batch
``needs_review``), costs its own token's samples and never another tenant's. A
batch's results are those of :func:`static.batch.check_batch`, equal to one
sample's alone (the tools see each sample as its own module; names are digests
with a ``-``, which no ``import`` can name). The token id is also each sample's
cache scope (:attr:`static.batch.Candidate.scope`): mypy's cache never answers
one token from an entry another token's sample made, so a check's speed tells
nobody whether another tenant submitted the same code.

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
import threading
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from gradebox.pipeline.core import Annotation, Graded
from gradebox.pipeline.static import StaticStage
from gradebox.pipeline.task_static import KEYS, LOCKFILE_NAMES, TaskStatic, allowing, task_static
from gradebox.service.problems import Problem
from static.batch import Candidate, StaticConfig, StaticResult, WarmTools
from static.policy import DEFAULT_POLICY, Policy

__all__ = ["BATCH_KEY", "LOCKFILE_NAMES", "StaticService", "TaskStatic", "check_task_static"]

BATCH_KEY: ContextVar[str] = ContextVar("gradebox_static_batch_key", default="")
"""Whose sample is being checked (the token id): only samples of one key share a batch."""
MAX_BATCH = 16
"""Most samples checked in one batch."""


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
    """The CLI's static stage with the tool layers run by the pool's batcher."""

    def __init__(self, batcher: _Batcher, config: StaticConfig, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self._batcher = batcher

    def _check(self, candidates: list[Candidate]) -> list[StaticResult]:
        key = BATCH_KEY.get()
        # The token's own cache scope: no token's check is sped up by another's entry.
        scoped = [dataclasses.replace(c, scope=key) for c in candidates]
        return self._batcher.check(key, scoped)


@dataclasses.dataclass(slots=True)
class _Job:
    """One candidate waiting for its result."""

    key: str
    candidate: Candidate
    result: StaticResult | None = None
    error: BaseException | None = None
    done: bool = False


class _Batcher:
    """Warm tools shared by threads; samples of one key that wait together run as a batch.

    No thread of its own: a caller that finds a free set of tools checks the
    oldest waiting sample's key, with up to :data:`MAX_BATCH` samples of that key,
    and so on until its own samples are done; the others wait for it.
    """

    def __init__(self, tools: list[WarmTools]) -> None:
        self._all = tools
        self._free = list(tools)
        self._waiting: deque[_Job] = deque()
        self._cond = threading.Condition()
        self.observe: Callable[[int], None] = lambda _size: None
        """Told each batch's size (the app's metrics)."""

    def check(self, key: str, candidates: list[Candidate]) -> list[StaticResult]:
        jobs = [_Job(key, c) for c in candidates]
        with self._cond:
            self._waiting.extend(jobs)
            while not all(j.done for j in jobs):
                if self._free and self._waiting:
                    self._run_one_batch()
                else:
                    self._cond.wait()
        for job in jobs:
            if job.error is not None:
                raise job.error
        return [j.result for j in jobs if j.result is not None]

    def _run_one_batch(self) -> None:
        """Check one batch (called holding the condition; released while checking)."""
        tools = self._free.pop()
        key = self._waiting[0].key
        batch = [j for j in self._waiting if j.key == key][:MAX_BATCH]
        for job in batch:
            self._waiting.remove(job)
        self._cond.release()
        try:
            self.observe(len(batch))
            results = tools.check_batch([j.candidate for j in batch])
            for job, result in zip(batch, results, strict=True):
                job.result = result
        except BaseException as exc:  # every sample of the batch gets the error (infra)
            for job in batch:
                job.error = exc
        finally:
            self._cond.acquire()
            self._free.append(tools)
            for job in batch:
                job.done = True
            self._cond.notify_all()

    def close(self) -> None:
        for tools in self._all:
            tools.close()


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
        # Each set of tools warms mypy for a few seconds: start them side by side.
        with ThreadPoolExecutor(len(folders), thread_name_prefix="gradebox-static-start") as ex:
            futures = [
                ex.submit(_warm_tools, dataclasses.replace(self.config, cache_dir=folder))
                for folder in folders
            ]
        started = [f.result() for f in futures if f.exception() is None]
        failed = next((f.exception() for f in futures if f.exception() is not None), None)
        if failed is not None:
            for tools in started:
                tools.close()
            raise failed
        self._batcher = _Batcher(started)

    def stage(self, settings: Mapping[str, Any]) -> StaticStage:
        """The static stage for a task's stored settings (cheap; cache it per revision)."""
        task = task_static(settings)
        policy = allowing(task.policy or self.policy, task.allow_rules)
        pins = task.pins if task.pins is not None else self.pins
        return _WarmStage(
            self._batcher, self.config, policy=policy, pins=pins, environment=self.environment
        )

    @staticmethod
    def annotate(stage: StaticStage, graded: Graded) -> Annotation:
        """The sample's static annotation, exactly as the CLI's stage makes it."""
        try:
            return stage.run([graded])[0]
        except Exception as exc:  # as the pipeline does: an infra error on the row
            message = f"static stage error: {type(exc).__name__}"
            return stage.crashed([graded], message)[0]

    def observe_batches(self, observe: Callable[[int], None]) -> None:
        """Tell ``observe`` the size of every batch checked from now on."""
        self._batcher.observe = observe

    def close(self) -> None:
        """Stop every worker of the tools."""
        self._batcher.close()


_WARMUP = Candidate(code="def warm(n: int) -> int:\n    return n\n", fn="warm")


def _warm_tools(config: StaticConfig) -> WarmTools:
    """Warm tools that have checked one candidate (so a tool that cannot start fails here)."""
    tools = WarmTools(config)
    try:
        tools.start()
        tools.check_batch([_WARMUP])
    except BaseException:
        tools.close()
        raise
    return tools
