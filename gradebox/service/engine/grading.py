"""Grading for the service: tasks from the store, one grader per task revision, three layers.

A sample goes through the CLI's pipeline: extract and gate (in a pool of worker
processes, :mod:`.front`), the hidden cases in the sandbox, then, as the
request asks (:class:`~gradebox.service.config.Layers`), the static layers
(:mod:`.static`: the CLI's static stage over warm sessions, with the task's
policy, allowed rules and lockfile) and the judge (:mod:`.judging`: the CLI's
judge stage). The record and its verdict come from
:func:`gradebox.pipeline.core.finish`, which decides through
:func:`gradebox.verdict.decide` alone; what is stored is a frozen
:class:`~gradebox.service.rows.StoredGrade` (that record, capped, with the
task's disclosure and the revisions it used), whose row is
:meth:`gradebox.grade.Grade.to_row`'s: the same row as ``gradebox grade``. The
judge only annotates: a test failure stays a failure, whatever it says.

With ``judge: "defer"`` the row is returned with ``judge.status: "pending"``
(which, like ``unavailable``, leaves the verdict to tests and static) and
:attr:`Outcome.later` judges in the background; the finished row (final judge
annotation, verdict decided again by the same function: a pass may then become
``needs_review``, never a failure a pass) replaces the stored one.

Rows name hidden cases by index only (``explain`` is never set), so no hidden
value can reach a client through a row; what a grader token sees of them is its
task's disclosure (:mod:`gradebox.service.rows`). Static findings and the judge's annotation
come from the code and the public task only; they are shown whatever the
disclosure, within the row size cap.

Synchronous grades go first at the sandbox (:mod:`.lanes`); each stage's time,
each verdict and each judgement are counted (:mod:`.metrics`).

Extract and gate run in worker processes under a time budget per sample, with
no lock shared between tasks: a sample that is slow to check costs one worker
until its budget is spent (then that worker is killed), not everyone's grading.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gradebox.grade import Grade, StaticReport
from gradebox.model import Sample
from gradebox.pipeline.core import Annotation, Graded, finish
from gradebox.pipeline.tests import (
    Front,
    FrontResult,
    GradeConfig,
    Grader,
    check_front,
    infra_grade,
)
from gradebox.service.config import Layers, ServiceConfig
from gradebox.service.engine.front import FrontFailure, FrontPool
from gradebox.service.engine.lanes import Lane, Lanes
from gradebox.service.engine.metrics import Metrics
from gradebox.service.engine.static import BATCH_KEY
from gradebox.service.engine.validate import build_task
from gradebox.service.rows import StoredGrade
from gradebox.service.store import Store
from sandbox.runner import Sandbox

if TYPE_CHECKING:
    from gradebox.pipeline.static import StaticStage
    from gradebox.service.engine.judging import JudgeService
    from gradebox.service.engine.rubricdata import RubricFiles
    from gradebox.service.engine.static import StaticService

__all__ = ["PENDING_REASON", "GradingService", "Outcome", "infra_grade"]

PENDING_REASON = "the judge is still running; read the row again later"
"""The ``reason`` of a pending judge annotation."""

_GRADERS_KEPT = 512
"""Graders kept (one per task revision in use), least recently used dropped first."""

StoreRow = Callable[[StoredGrade], object]


@dataclass(frozen=True, slots=True)
class Outcome:
    """A sample's stored grade, and the deferred judgement still to run, if any."""

    stored: StoredGrade
    """The grade as stored."""
    later: Callable[[StoreRow], None] | None = None
    """Start the deferred judgement; it calls its argument with the finished grade."""


@dataclass(frozen=True, slots=True)
class _TaskGrader:
    revision: int
    grader: Grader
    disclosure: str
    static: StaticStage | None


class GradingService:
    """Grades one sample at a time against a stored task; thread-safe."""

    def __init__(
        self,
        store: Store,
        sandbox: Sandbox,
        front: FrontPool,
        config: ServiceConfig,
        *,
        lanes: Lanes,
        metrics: Metrics,
        static: StaticService | None = None,
        judge: JudgeService | None = None,
        rubrics: RubricFiles | None = None,
    ) -> None:
        """Grade in ``sandbox`` and ``front`` (the caller starts and closes all of them).

        The server's limits apply unless a task lowers them. Synchronous grades
        hold ``lanes`` while in extract, gate and the sandbox; ``metrics`` counts.
        Without ``static`` or ``judge`` those layers are off on this server. The
        judge reads a task's rubric from ``rubrics`` when it is a stored one.
        """
        self._store = store
        self._sandbox = sandbox
        self._front = front
        self._config = config
        self.static = static
        self.judge = judge
        self._rubrics = rubrics
        self._lanes = lanes
        self._metrics = metrics
        self._graders: OrderedDict[tuple[str, int], _TaskGrader] = OrderedDict()
        if static is not None:
            static.observe_batches(metrics.static_batch)
        self._lock = threading.Lock()

    def grade(
        self,
        sample: Sample,
        layers: Layers,
        *,
        lane: Lane = "sync",
        revision: int | None = None,
        owner: str = "",
        rubric: str | None = None,
    ) -> Outcome:
        """Grade one sample with the layers asked for (an infra row if its task is gone).

        ``revision`` is the task revision to grade against (a run's, pinned when it
        was submitted); ``None``: the current one. The row records it as
        ``task_revision``. ``owner`` (the token id) is the static batch key: only
        samples of one owner are checked in one batch, and the judge's turns, backlog
        share and cache scope (:mod:`.judging`). ``rubric`` is the rubric file
        the judge loads (a run's pinned snapshot); ``None``: the task's rubric now.
        """
        found = self._task(sample.task, revision)
        if found is None:
            stored = self.finish(infra_grade(sample, "task is not registered"), "verdict")
            return self._counted(Outcome(stored), lane)
        return self._grade(found, sample, layers, lane, owner, rubric)

    def _grade(
        self,
        found: _TaskGrader,
        sample: Sample,
        layers: Layers,
        lane: Lane,
        owner: str,
        rubric: str | None = None,
    ) -> Outcome:
        static = self.static if layers.static and found.static is not None else None
        notes: dict[str, Annotation] = {}
        # Announced before the sandbox: its token's static batch waits for it.
        with static.expecting(owner) if static is not None else contextlib.nullcontext():
            if lane == "sync":
                with self._lanes.sync():
                    graded = self._tests(found, sample, lane)
            else:
                graded = self._tests(found, sample, lane)
            if isinstance(graded, str):
                stored = self.finish(infra_grade(sample, graded), found.disclosure, found.revision)
                return self._counted(Outcome(stored), lane)
            if static is not None and found.static is not None:
                notes["static"] = self._static(static, found.static, graded, owner, lane)
        later = None
        judge = self.judge
        if layers.judge != "off" and judge is not None:
            graded = self._with_rubric(graded, rubric)
            upfront = judge.upfront(graded)
            if upfront is not None:
                notes["judge"] = upfront
            elif layers.judge == "wait":
                notes["judge"] = self._judged(judge.annotate(graded, owner=owner), lane)
            else:
                from judge import JudgeResult  # noqa: PLC0415 - loaded with the judge

                notes["judge"] = Annotation(JudgeResult.pending(PENDING_REASON))
                later = self._later(judge, graded, notes, found, lane, owner)
        return self._counted(Outcome(self._stored(graded, notes, found), later), lane)

    def _static(
        self, static: StaticService, stage: StaticStage, graded: Graded, owner: str, lane: Lane
    ) -> Annotation:
        t0 = time.perf_counter()
        key = BATCH_KEY.set(owner)
        try:
            return static.annotate(stage, graded)
        finally:
            BATCH_KEY.reset(key)
            self._metrics.stage("static", lane, time.perf_counter() - t0)

    def _with_rubric(self, graded: Graded, pinned: str | None = None) -> Graded:
        """``graded`` with its task's rubric as the file the judge loads (a stored rubric)."""
        public = graded.public
        if public is None:
            return graded
        if pinned is not None:
            path = pinned
        elif self._rubrics is not None:
            path = self._rubrics.path(public.rubric)
        else:
            return graded
        if path == public.rubric:
            return graded
        return replace(graded, public=replace(public, rubric=path))

    def _tests(self, found: _TaskGrader, sample: Sample, lane: Lane) -> Graded | str:
        """Extract, gate and the hidden cases; a message when extract and gate failed."""
        t0 = time.perf_counter()
        job = found.grader.front_job(sample)
        if len(job.reply or "") + len(job.code or "") <= self._config.front_inline_chars:
            front: FrontResult | FrontFailure = check_front(job)  # cheaper than the trip
        else:
            front = self._front.check(job, self._config.front_budget_s)
        t1 = time.perf_counter()
        self._metrics.stage("front", lane, t1 - t0)
        if isinstance(front, FrontFailure):
            return front.message
        graded = found.grader.grade_cases(sample, Front(front.extraction, front.gate, t0))
        self._metrics.stage("tests", lane, time.perf_counter() - t1)
        return graded

    def _counted(self, outcome: Outcome, lane: Lane) -> Outcome:
        self._metrics.verdict(lane, outcome.stored.grade.verdict.verdict)
        return outcome

    def _judged(self, note: Annotation, lane: Lane) -> Annotation:
        value = note.value
        if value is not None and not isinstance(value, StaticReport):
            self._metrics.judged(value.status, cache_hit=value.cache_hit, attempts=value.attempts)
            self._metrics.stage("judge", lane, value.latency_ms / 1000)
        return note

    def _stored(
        self, graded: Graded, notes: dict[str, Annotation], found: _TaskGrader
    ) -> StoredGrade:
        return self.finish(finish(graded, notes), found.disclosure, found.revision)

    def _later(
        self,
        judge: JudgeService,
        graded: Graded,
        notes: dict[str, Annotation],
        found: _TaskGrader,
        lane: Lane,
        owner: str,
    ) -> Callable[[StoreRow], None]:
        def start(store_row: StoreRow) -> None:
            def done(note: Annotation) -> None:
                self._judged(note, lane)
                store_row(self._stored(graded, {**notes, "judge": note}, found))

            judge.later(graded, done, owner=owner)

        return start

    def finish(self, grade: Grade, disclosure: str, revision: int | None = None) -> StoredGrade:
        """The grade as stored: a fixed infra message, capped, with its task's disclosure.

        ``revision`` is the task revision it was graded against (``None``: none was found).
        """
        return StoredGrade.capped(
            grade, disclosure, self._config.max_row_bytes, task_revision=revision
        )

    def _task(self, task_id: str, revision: int | None) -> _TaskGrader | None:
        if revision is None:
            revision = self._store.task_revision(task_id)
            if revision is None:
                return None
        key = (task_id, revision)
        with self._lock:
            cached = self._graders.get(key)
            if cached is not None:
                self._graders.move_to_end(key)
                return cached
        stored = self._store.task(task_id, revision)
        if stored is None:
            return None
        task = build_task(task_id, stored.public, stored.hidden)
        config = GradeConfig(limits=replace(self._config.limits, **stored.limits))
        static = self.static.stage(stored.static) if self.static is not None else None
        built = _TaskGrader(
            stored.revision,
            Grader(self._sandbox, {task_id: task}, config),
            stored.disclosure,
            static,
        )
        with self._lock:
            self._graders[key] = built
            while len(self._graders) > _GRADERS_KEPT:
                self._graders.popitem(last=False)
        return built
