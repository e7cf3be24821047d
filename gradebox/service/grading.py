"""Grading for the service: tasks from the store, one grader per task revision.

The service grades hidden tests only (no static layers, no judge): a gate for
code suggestions needs an answer in milliseconds, and rows then never depend
on an outside model. Rows name hidden cases by index only (``explain`` is
never set), so no hidden value can reach a client through a row.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

from gradebox.grader import GradeConfig, Grader, Sample, infra_row
from gradebox.service.store import Store
from gradebox.service.validate import build_task
from sandbox.runner import Sandbox
from sandbox.types import Limits

__all__ = ["GradingService", "infra_row"]


class GradingService:
    """Grades one sample at a time against a stored task; thread-safe."""

    def __init__(self, store: Store, sandbox: Sandbox, limits: Limits) -> None:
        """Grade in ``sandbox`` with ``limits`` unless a task lowers them."""
        self._store = store
        self._sandbox = sandbox
        self._limits = limits
        self._graders: dict[str, tuple[int, Grader]] = {}
        self._lock = threading.Lock()
        # Grader serialises its parser-warning handling (not thread-safe) with a
        # per-instance lock; every grader here shares one so that still holds.
        self._front = threading.Lock()

    def grade(self, sample: Sample) -> dict[str, Any]:
        """Grade one sample and return its row (an infra row if its task is gone)."""
        grader = self._grader(sample.fn)
        if grader is None:
            return infra_row(sample, "task is not registered")
        return grader.grade(sample)

    def _grader(self, fn: str) -> Grader | None:
        revision = self._store.task_revision(fn)
        if revision is None:
            return None
        with self._lock:
            cached = self._graders.get(fn)
            if cached is not None and cached[0] == revision:
                return cached[1]
        stored = self._store.task(fn)
        if stored is None:
            return None
        task = build_task(fn, stored.public, stored.hidden)
        config = GradeConfig(limits=replace(self._limits, **stored.limits))
        grader = Grader(self._sandbox, {fn: task}, config)
        grader._front = self._front  # see __init__
        with self._lock:
            self._graders[fn] = (stored.revision, grader)
        return grader
