"""Grading for the service: tasks from the store, one grader per task revision.

The service grades hidden tests only (no static layers, no judge): a gate for
code suggestions needs an answer in milliseconds, and rows then never depend
on an outside model. Rows name hidden cases by index only (``explain`` is
never set), so no hidden value can reach a client through a row; what a
grader token sees of them is its task's disclosure (:mod:`.rows`).

Extract and gate run in a pool of worker processes (:mod:`.front`), under a
time budget per sample, with no lock shared between tasks: a sample that is
slow to check costs one worker until its budget is spent (then that worker is
killed), not everyone's grading, which threads could not give (the parser
holds the GIL for a whole parse).
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Any

from gradebox.grader import Front, GradeConfig, Grader, Sample, infra_row
from gradebox.service.config import ServiceConfig
from gradebox.service.front import FrontFailure, FrontPool
from gradebox.service.rows import cap_row, public_infra
from gradebox.service.store import Store
from gradebox.service.validate import build_task
from sandbox.runner import Sandbox

__all__ = ["GradingService", "infra_row"]


class GradingService:
    """Grades one sample at a time against a stored task; thread-safe."""

    def __init__(
        self, store: Store, sandbox: Sandbox, front: FrontPool, config: ServiceConfig
    ) -> None:
        """Grade in ``sandbox`` and ``front`` (the caller starts and closes both).

        The server's limits apply unless a task lowers them.
        """
        self._store = store
        self._sandbox = sandbox
        self._front = front
        self._config = config
        self._graders: dict[str, tuple[int, Grader, str]] = {}
        self._lock = threading.Lock()

    def grade(self, sample: Sample) -> dict[str, Any]:
        """Grade one sample and return its row as stored (an infra row if its task is gone)."""
        found = self._grader(sample.fn)
        if found is None:
            return self.finish(infra_row(sample, "task is not registered"), "verdict")
        grader, disclosure = found
        t0 = time.perf_counter()
        front = self._front.check(grader.front_job(sample), self._config.front_budget_s)
        if isinstance(front, FrontFailure):
            return self.finish(infra_row(sample, front.message), disclosure)
        row = grader.grade(sample, Front(front.extraction, front.gate, t0))
        return self.finish(row, disclosure)

    def finish(self, row: dict[str, Any], disclosure: str) -> dict[str, Any]:
        """The row as stored: a fixed infra message, capped, with its task's disclosure."""
        row = cap_row(public_infra(row, "grade"), self._config.max_row_bytes)
        row["disclosure"] = disclosure or "verdict"
        return row

    def _grader(self, fn: str) -> tuple[Grader, str] | None:
        revision = self._store.task_revision(fn)
        if revision is None:
            return None
        with self._lock:
            cached = self._graders.get(fn)
            if cached is not None and cached[0] == revision:
                return cached[1], cached[2]
        stored = self._store.task(fn)
        if stored is None:
            return None
        task = build_task(fn, stored.public, stored.hidden)
        config = GradeConfig(limits=replace(self._config.limits, **stored.limits))
        grader = Grader(self._sandbox, {fn: task}, config)
        with self._lock:
            self._graders[fn] = (stored.revision, grader, stored.disclosure)
        return grader, stored.disclosure
