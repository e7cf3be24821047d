"""The static layers in the service: warm sessions, per-task settings, the CLI's stage.

A row's ``static`` field is built by the CLI's own :class:`~gradebox.pipeline.static.StaticStage`
(imports vs lockfile, metrics, diff size, policy, the same :class:`~gradebox.grade.StaticReport`),
so the same code under the same policy and lockfile gives the same JSON through
the API as through ``gradebox grade``. It runs in **session processes**
(``sessions`` of them, a :class:`pebble.ProcessPool` on ``forkserver``), each
with warm :class:`static.batch.WarmTools` (mypy and bandit in long-lived worker
processes of its own), never in the server's process: reading a large candidate
(imports, metrics, the typed copy mypy checks) holds the GIL for seconds, and
in the server's process one client's 128 KiB sample would stall every other
client's grade meanwhile. A batch that outlives its time limit kills its
session (pebble restarts it, warm again in a few seconds); the batch's samples
get an infrastructure error on their ``static`` field.

Samples arriving together are checked together (:mod:`.batches`): ruff, mypy
and bandit start once per batch instead of once per sample, which is what
makes a burst cheap (on this machine a batch of 8 costs ~35 ms a sample against
~160 ms for one alone). A sample whose caller finds a free session is checked
at once, with whatever else of its token is waiting, unless more of its token's
samples are in the sandbox now: then the batch waits for them, :data:`~.batches.WINDOW_S`
at most (:meth:`StaticService.expecting`). A batch
holds the samples of **one token only** (the batch key, :data:`BATCH_KEY`): a
sample that makes a tool slow, or time out (which marks its whole batch
``needs_review``), costs its own token's samples and never another tenant's. A
batch's results are those of :func:`static.batch.check_batch`, equal to one
sample's alone (the tools see each sample as its own module; names are digests
with a ``-``, which no ``import`` can name). The token id is also each sample's
cache scope (:attr:`static.batch.Candidate.scope`): mypy's cache never answers
one token from an entry another token's sample made, so a check's speed tells
nobody whether another tenant submitted the same code.

Per-task settings (:class:`TaskStatic`, ``"static"`` in ``PUT /v1/tasks/{task}``)
replace the server's policy and lockfile for that task, and name the rule ids
the task legitimately needs (``allow_rules``: a task that asks for an MD5
digest allows bandit's ``B324``). An allowed rule's findings stay on the row;
they only never decide its effect (they are added to every selector's
``except_rules``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import multiprocessing
import os
import queue
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from multiprocessing.queues import Queue
from pathlib import Path
from typing import Any

from pebble import ProcessPool

from gradebox.grade import TestsReport
from gradebox.pipeline.core import Annotation, Graded
from gradebox.pipeline.static import StaticStage
from gradebox.pipeline.task_static import KEYS, LOCKFILE_NAMES, TaskStatic, allowing, task_static
from gradebox.service.engine.batches import Batcher
from gradebox.service.problems import Problem
from static.batch import Candidate, StaticConfig, StaticResult, WarmTools, check_tools
from static.findings import ToolError
from static.policy import DEFAULT_POLICY, Policy

__all__ = ["BATCH_KEY", "LOCKFILE_NAMES", "StaticService", "TaskStatic", "check_task_static"]

BATCH_KEY: ContextVar[str] = ContextVar("gradebox_static_batch_key", default="")
"""Whose sample is being checked (the token id): only samples of one key share a batch."""


def check_task_static(body: Any, problems: list[Problem]) -> dict[str, object]:
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


@dataclasses.dataclass(frozen=True, slots=True)
class _Item:
    """One sample's static check as a session process gets it (pickled)."""

    graded: Graded
    policy: Policy
    pins: Mapping[str, str] | None


def _wait_ready(ready: Queue[str], count: int, timeout_s: float) -> None:
    """Wait until ``count`` sessions said they started (``ready`` tells each, or its failure)."""
    deadline = time.monotonic() + timeout_s
    for _ in range(count):
        try:
            failed = ready.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise ToolError(f"the static sessions did not start within {timeout_s} s") from None
        if failed:
            raise ToolError(f"a static session did not start: {failed}")


class StaticService:
    """Warm static session processes and the server's default policy and lockfile; thread-safe."""

    def __init__(
        self,
        *,
        sessions: int = 2,
        cache_dir: Path | None = None,
        policy: Policy = DEFAULT_POLICY,
        pins: dict[str, str] | None = None,
        start_timeout_s: float = 120.0,
        advisories: Path | None = None,
    ) -> None:
        """Start ``sessions`` session processes (each warms up in ~2.5 s) and wait for them.

        Args:
            sessions: How many batches may be checked at once.
            cache_dir: mypy's cache (each session process keeps its own below it);
                ``None`` keeps it in each session's scratch directory.
            policy: The server's policy (a task may replace it).
            pins: The server's lockfile pins; ``None`` lets the installed
                environment stand in (as ``gradebox grade`` without ``--lockfile``).
            start_timeout_s: How long the sessions may take to start.
            advisories: An OSV advisory directory or zip: each session opens its index
                (kept beside mypy's cache) and runs the ``deps`` layer.

        Raises:
            static.findings.ToolError: A tool is missing or did not start.
        """
        self.config = StaticConfig(cache_dir=cache_dir, jobs=1)
        self.policy = policy
        self.pins = pins
        self.environment = importlib.metadata.packages_distributions()
        check_tools(self.config)  # a missing tool fails here, not in every session
        count = max(1, sessions)
        # Every session's scratch (warm tools, an advisory index) lives below this one
        # directory, removed by :meth:`close`: pebble ends a session with SIGTERM (at
        # close, or a stuck one), and a session so ended cleans nothing itself.
        self._scratch = Path(tempfile.mkdtemp(prefix="gradebox-static-"))
        self._pool: ProcessPool | None = None
        try:
            self._start(count, advisories, start_timeout_s)
        except BaseException:
            self.close()
            raise
        self._batcher: Batcher[_Item, Annotation] = Batcher(self._in_session, count)

    def _start(self, count: int, advisories: Path | None, timeout_s: float) -> None:
        """Start ``count`` session processes and wait until each said it is ready."""
        context = multiprocessing.get_context("forkserver")
        ready: Queue[str] = context.Queue()
        self._pool = ProcessPool(
            max_workers=count, initializer=_start_session,
            initargs=(self.config, ready, advisories, self._scratch),
            context=context,
        )  # fmt: skip
        if not self._pool.active:  # reading ``active`` starts the workers
            raise ToolError("the static sessions did not start")
        _wait_ready(ready, count, timeout_s)

    def _in_session(self, key: str, items: list[_Item]) -> list[Annotation]:
        pool = self._pool
        if pool is None:
            raise RuntimeError("the static sessions are closed")
        # A batch's tools each have config.timeout_s; a session past twice that (and a
        # restart's warm-up) is stuck: pebble kills it, and starts a fresh one.
        timeout = 2 * self.config.timeout_s + 30
        result: list[Annotation] = pool.schedule(
            _check_in_session, args=(key, items), timeout=timeout
        ).result()
        return result

    def stage(self, settings: Mapping[str, Any]) -> StaticStage:
        """The static stage for a task's stored settings (cheap; cache it per revision)."""
        task = task_static(settings)
        policy = allowing(task.policy or self.policy, task.allow_rules)
        pins = task.pins if task.pins is not None else self.pins
        return StaticStage(self.config, policy=policy, pins=pins, environment=self.environment)

    def annotate(self, stage: StaticStage, graded: Graded) -> Annotation:
        """The sample's static annotation, exactly as the CLI's stage makes it, in a session.

        The token id (:data:`BATCH_KEY`) picks the batch and is the sample's cache scope.
        """
        if graded.code is None:
            return Annotation(None)
        item = _Item(_lean(graded), stage.policy, stage.pins)
        try:
            return self._batcher.check(BATCH_KEY.get(), [item])[0]
        except Exception as exc:  # as the pipeline does: an infra error on the row
            message = f"static stage error: {type(exc).__name__}"
            return stage.crashed([graded], message)[0]

    def expecting(self, key: str) -> contextlib.AbstractContextManager[None]:
        """Announce a sample of ``key`` that may reach :meth:`annotate` within the block.

        Its key's batch then waits for it (:data:`~.batches.WINDOW_S` at most): larger batches.
        """
        return self._batcher.expecting(key)

    def observe_batches(self, observe: Callable[[int], None]) -> None:
        """Tell ``observe`` the size of every batch checked from now on."""
        if hasattr(self, "_batcher"):
            self._batcher.observe = observe

    def close(self) -> None:
        """Stop the session processes (and so their tools' workers); idempotent."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()  # type: ignore[no-untyped-call]  # pebble leaves it untyped
            pool.join()
        shutil.rmtree(self._scratch, ignore_errors=True)


def _lean(graded: Graded) -> Graded:
    """What a session needs of a sample (no test report: less to pickle)."""
    return dataclasses.replace(graded, tests=_NO_TESTS)


_NO_TESTS = TestsReport(outcomes=(), gate=None, claim="none", latency_ms=0.0)


# ------------------------------------------------------------- in a session process

_SESSION: dict[str, Any] = {}
"""This session process's tools and environment (set by :func:`_start_session`)."""


def _start_session(
    config: StaticConfig, ready: Queue[str], advisories: Path | None, scratch: Path
) -> None:
    """Initializer of a session process: warm tools of its own, then say so on ``ready``.

    Its temporary files go below ``scratch``, which the server removes.
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # nothing to clean: its tools follow it
    tempfile.tempdir = str(scratch)
    if config.cache_dir is not None:  # each session its own mypy cache (one writer each)
        config = dataclasses.replace(config, cache_dir=config.cache_dir / f"session-{os.getpid()}")
    try:
        _SESSION["tools"] = _warm_tools(config)
        _SESSION["environment"] = importlib.metadata.packages_distributions()
        _SESSION["config"] = config
        if advisories is not None:
            from gradebox.pipeline.static import open_advisories  # noqa: PLC0415

            cache = config.cache_dir.parent if config.cache_dir is not None else None
            _SESSION["advisories"] = open_advisories(advisories, cache)
    except Exception as exc:
        ready.put(f"{type(exc).__name__}: {str(exc)[:300]}")
        raise
    ready.put("")


def _check_in_session(key: str, items: list[_Item]) -> list[Annotation]:
    """One batch: the tool layers once over every item, then each item's own checks."""
    tools: WarmTools = _SESSION["tools"]
    stages = [
        _SessionStage(tools, _SESSION["config"], policy=i.policy, pins=i.pins,
                      environment=_SESSION["environment"], advisories=_SESSION.get("advisories"))
        for i in items
    ]  # fmt: skip
    candidates = [s.candidate(i.graded, key) for s, i in zip(stages, items, strict=True)]
    results = stages[0].check([c for c in candidates if c is not None])
    found = iter(results)
    return [
        s.annotate(i.graded, next(found)) if c is not None else Annotation(None)
        for s, i, c in zip(stages, items, candidates, strict=True)
    ]


class _SessionStage(StaticStage):
    """The CLI's stage with this session's warm tools (never closes them)."""

    def __init__(self, tools: WarmTools, config: StaticConfig, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self._warm = tools

    def _check(self, candidates: list[Candidate]) -> list[StaticResult]:
        try:
            return self._warm.check_batch(candidates)
        except Exception:  # a bug a sample triggered: find it rather than fail the batch
            if len(candidates) == 1:
                raise
        return [self._check_alone(candidate) for candidate in candidates]


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
