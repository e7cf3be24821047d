"""The service's moving parts and their life: store, sandbox, static, judge, grading, worker."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING

import anyio

from gradebox.service.config import ServiceConfig
from gradebox.service.engine.front import FrontPool
from gradebox.service.engine.grading import GradingService
from gradebox.service.engine.lanes import Lanes
from gradebox.service.engine.metrics import Metrics
from gradebox.service.engine.quota import GradeSlots, RateLimiter
from gradebox.service.engine.rubricdata import RubricFiles
from gradebox.service.engine.static import StaticService
from gradebox.service.engine.worker import RunWorker
from gradebox.service.problems import ApiError
from gradebox.service.store import Store
from sandbox.runner import Sandbox, open_sandbox

if TYPE_CHECKING:
    from gradebox.pipeline.judge import JudgeStage
    from gradebox.service.engine.judging import JudgeService

__all__ = ["PARSERS", "ServiceState"]

PARSERS = 8
"""Bodies parsed and checked at once: in the grading pool (grade bodies), and in AnyIO's
worker threads (every other body, and big results read off the event loop)."""

_log = logging.getLogger("gradebox.service")


class ServiceState:
    """Everything a request handler needs; opened by the app's lifespan."""

    def __init__(
        self,
        config: ServiceConfig,
        sandbox: Sandbox | None,
        *,
        static: StaticService | None = None,
        judge: JudgeStage | None = None,
    ) -> None:
        """Use ``sandbox`` and ``static`` when given (the caller closes them), else open them.

        ``judge`` is the judge stage (the caller closes it); without one the judge is off.
        """
        self.config = config
        self._given = sandbox
        self._given_static = static
        self._static: StaticService | None = static
        self._judge_stage = judge
        self._judge: JudgeService | None = None
        self._sandbox: Sandbox | None = None
        self._grading: GradingService | None = None
        self._store: Store | None = None
        self._rubrics: RubricFiles | None = None
        self._worker: RunWorker | None = None
        self._closing = False
        self._lock = threading.Lock()
        self.slots = GradeSlots(
            config.per_token_concurrency, config.max_inflight_grades, config.retry_after_s
        )
        """Synchronous grades in flight."""
        self.rate = RateLimiter(config.rate_per_minute, config.rate_burst)
        """Samples graded per token and task."""
        self.pool = ThreadPoolExecutor(
            config.max_inflight_grades + PARSERS, thread_name_prefix="gradebox-sync"
        )
        """Synchronous grades: each body checked, then graded, in one thread (at most
        ``max_inflight_grades`` grading, each holding a slot, and ``PARSERS`` checking)."""
        self.grade_checks = threading.BoundedSemaphore(PARSERS)
        """Grade bodies being parsed and checked in :attr:`pool`."""
        self._parsers: anyio.CapacityLimiter | None = None
        self._front = FrontPool(config.front_workers)
        self.lanes = Lanes(config.workers, config.sync_reserved_workers)
        """Synchronous grades first at the sandbox."""
        self.metrics = Metrics()
        """This app's metrics (its own registry)."""

    @property
    def parsers(self) -> anyio.CapacityLimiter:
        """Threads for parsing and checking bodies and reading big results off the event loop."""
        if self._parsers is None:  # bound to the running event loop, so made on first use
            self._parsers = anyio.CapacityLimiter(PARSERS)
        return self._parsers

    @property
    def store(self) -> Store:
        """The database (open while the app runs)."""
        if self._store is None:
            raise ApiError(503, "not ready")
        return self._store

    @property
    def rubrics(self) -> RubricFiles:
        """Stored rubrics (open while the app runs)."""
        if self._rubrics is None:
            raise ApiError(503, "not ready")
        return self._rubrics

    @property
    def grading(self) -> GradingService | None:
        """The grader, once the sandbox passed its self-check; ``None`` before (fail closed)."""
        return self._grading

    @property
    def has_static(self) -> bool:
        """Whether this server runs the static layers (``--static-sessions`` above 0)."""
        return self._given_static is not None or self.config.static_sessions > 0

    @property
    def has_judge(self) -> bool:
        """Whether a judge endpoint is configured."""
        return self._judge_stage is not None

    @property
    def judge_stage(self) -> JudgeStage | None:
        """The judge stage (for checking a task's rubric), when configured."""
        return self._judge_stage

    @property
    def backend(self) -> str | None:
        """The isolation in use, once ready."""
        return self._sandbox.backend if self._sandbox is not None else None

    def open(self) -> None:
        """Open the store, start the front's processes and the run worker, open the sandbox.

        The sandbox opens (and checks its isolation) in the background.
        """
        self._store = Store(self.config.db)
        self._rubrics = RubricFiles(self._store)
        _settle_pending(self._store)
        if self._judge_stage is not None:
            from gradebox.service.engine.judging import JudgeService  # noqa: PLC0415 - loads openai

            self._judge = JudgeService(
                self._judge_stage, backlog=self.config.judge_backlog, live=self._store.token_live
            )
        self._front.start()
        worker = self._worker = RunWorker(
            self._store, lambda: self._grading, self.lanes, self._rubrics
        )
        self.lanes.on_free(worker.place_freed)
        self.lanes.count_samples(lambda: worker.running)
        store = self._store
        self.metrics.gauges(
            "sync", depth=lambda: self.slots.total, busy=lambda: self.lanes.sync_inflight
        )
        self.metrics.gauges("batch", depth=store.queued_samples, busy=lambda: worker.inflight)
        worker.start()
        if self._given is not None and (self._static is not None or not self.has_static):
            self._ready(self._given)
        else:
            threading.Thread(
                target=self._open_sandbox, name="gradebox-sandbox", daemon=True
            ).start()

    def _open_sandbox(self) -> None:
        c = self.config
        try:
            # The static sessions warm up while the sandbox starts and checks itself.
            with ThreadPoolExecutor(1, thread_name_prefix="gradebox-static-open") as ex:
                static = None
                if self._static is None and c.static_sessions > 0:
                    static = ex.submit(
                        StaticService,
                        sessions=c.static_sessions,
                        cache_dir=c.static_cache,
                        policy=c.static_policy,
                        pins=c.static_pins,
                        advisories=c.static_advisories,
                    )
                try:
                    sb = self._given or open_sandbox(
                        c.isolation, c.limits, workers=c.workers, python=c.sandbox_python
                    )
                except Exception:
                    if static is not None and static.exception() is None:
                        static.result().close()  # no half-open server: it stays not ready
                    raise
                if static is not None:
                    self._static = static.result()
        except Exception as exc:  # IsolationUnavailable, a missing tool: stay not ready
            _log.error("sandbox or static layers refused; the service stays not ready: %s", exc)
            return
        with self._lock:
            closing = self._closing
        if closing:
            if sb is not self._given:
                sb.close()
            return
        self._ready(sb)

    def _ready(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox
        self.metrics.recycles(lambda: sandbox.recycles)
        self.metrics.replays(lambda: sandbox.replays)
        self._grading = GradingService(
            self.store,
            sandbox,
            self._front,
            self.config,
            lanes=self.lanes,
            metrics=self.metrics,
            static=self._static,
            judge=self._judge,
            rubrics=self._rubrics,
        )
        _log.info("sandbox ready (isolation: %s)", sandbox.backend)
        if self._worker is not None:
            self._worker.wake()

    def wake_worker(self) -> None:
        """Tell the run worker a run was submitted."""
        if self._worker is not None:
            self._worker.wake()

    def close(self) -> None:
        """Stop the worker (in-flight samples finish or resume later), the sandbox, the store."""
        with self._lock:
            self._closing = True
        if self._worker is not None and not self._worker.stop(self.config.shutdown_grace_s):
            _log.warning("samples still in flight at shutdown: they are graded on the next start")
        self.pool.shutdown(wait=False, cancel_futures=True)
        if self._judge is not None:  # rows still pending are settled on the next start
            self._judge.close(wait=False)
        self._front.close()
        if self._static is not None and self._given_static is None:
            self._static.close()
        if self._sandbox is not None and self._given is None:
            self._sandbox.close()
        if self._rubrics is not None:
            self._rubrics.close()
        if self._store is not None:
            self._store.close()


def _settle_pending(store: Store) -> None:
    """Rows whose deferred judgement was lost with the last process: the judge is unavailable.

    The verdict stays as stored: ``pending`` and ``unavailable`` are both neither a
    mismatch nor unscored, so :func:`gradebox.verdict.decide` gives the same verdict.
    """
    rows = store.pending_judgements()
    if not rows:
        return
    from judge import JudgeResult  # noqa: PLC0415 - only when there is something to settle

    lost = JudgeResult(
        status="unavailable",
        reason_code="endpoint_error",
        reason="the service stopped before the judge answered",
    )
    for kind, key, idx, stored in rows:
        settled = replace(stored, grade=replace(stored.grade, judge=lost))
        if kind == "grade":
            store.update_grade(key, settled)
        else:
            store.update_result(key, idx, settled)
    _log.warning(
        "%d deferred judgements were lost at the last stop (judge: unavailable)", len(rows)
    )
