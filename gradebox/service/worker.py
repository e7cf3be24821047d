"""The run worker: grades queued runs from the database, one result committed at a time.

One thread takes the oldest unfinished run (an interrupted one first), and
grades its samples that have no result yet through a small thread pool (the
candidates run in the sandbox's isolated workers). Before a sample is graded
its result is checked again, and a result is written only where none exists
(:meth:`Store.put_result`), so a sample never gets two.

Stopping (shutdown) and cancelling stop new samples from starting; samples in
flight finish and are committed. A sample cut off by a hard kill has no result
and is graded when the run resumes, on the next start.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from gradebox.service.grading import GradingService, infra_row
from gradebox.service.store import Store
from gradebox.service.validate import sample_from_json

__all__ = ["RunWorker"]

_log = logging.getLogger("gradebox.service")


class RunWorker:
    """A background thread that grades runs until stopped."""

    def __init__(
        self, store: Store, grading: Callable[[], GradingService | None], jobs: int
    ) -> None:
        """Grade with ``grading()`` (``None`` while the sandbox is not ready), ``jobs`` at once."""
        self._store = store
        self._grading = grading
        self._jobs = max(1, jobs)
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="gradebox-runs", daemon=True)

    def start(self) -> None:
        """Start the thread; unfinished runs in the database resume at once."""
        self._thread.start()

    def wake(self) -> None:
        """A run was submitted or the sandbox became ready."""
        self._wake.set()

    def stop(self, timeout: float) -> bool:
        """Start no new sample; wait up to ``timeout`` s for those in flight; True if done."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def _loop(self) -> None:
        while not self._stop.is_set():
            grading = self._grading()
            run_id = self._store.next_run() if grading is not None else None
            if grading is None or run_id is None:
                self._wake.wait(1.0)
                self._wake.clear()
                continue
            try:
                self._process(grading, run_id)
            except Exception:  # a database error: keep serving, retry the run later
                _log.exception("run %s: worker error; the run resumes later", run_id)
                self._stop.wait(1.0)

    def _halted(self, run_id: str) -> bool:
        if self._stop.is_set():
            return True
        info = self._store.run(run_id)
        return info is None or info.status == "cancelled"

    def _process(self, grading: GradingService, run_id: str) -> None:
        self._store.set_status(run_id, "running")
        pending = iter(self._store.pending(run_id))
        _log.info("run %s: grading", run_id)
        with ThreadPoolExecutor(self._jobs, thread_name_prefix="gradebox-grade") as pool:
            inflight: set[Future[None]] = set()
            while True:
                while len(inflight) < self._jobs and not self._halted(run_id):
                    item = next(pending, None)
                    if item is None:
                        break
                    if not self._store.has_result(run_id, item[0]):
                        inflight.add(pool.submit(self._grade_one, grading, run_id, *item))
                if not inflight:
                    break
                done, inflight = wait(inflight, return_when=FIRST_COMPLETED)
                for future in done:
                    if future.exception() is not None:
                        _log.error("run %s: a result could not be stored; it resumes later", run_id)
        finished = not self._stop.is_set() and not self._store.pending(run_id)
        if finished and self._store.set_status(run_id, "done"):
            _log.info("run %s: done", run_id)

    def _grade_one(
        self, grading: GradingService, run_id: str, idx: int, obj: dict[str, Any]
    ) -> None:
        sample = sample_from_json(obj)
        try:
            row = grading.grade(sample)
        except Exception as exc:  # a grader bug must not look like a wrong submission
            row = infra_row(sample, f"grader error: {type(exc).__name__}")
        self._store.put_result(run_id, idx, row)
