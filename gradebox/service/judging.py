"""The judge in the service: the CLI's judge stage, one sample at a time, limited.

The stage (:class:`~gradebox.pipeline.judge.JudgeStage`) is built at the CLI
boundary (``gradebox serve`` reads ``GRADEBOX_JUDGE_*`` there) and handed to
the app; endpoint, model and key never come from a client and are never shown
to one. What the judge sees is what the CLI's stage builds: the public spec,
signature and rubric, and the extracted code; never hidden cases.

``judge: "wait"`` judges in the grading thread before the row is returned;
``"defer"`` returns the row with ``judge.status: "pending"`` and judges in
this module's own threads (``concurrency`` of them, the stage's own request
limit). Both share one limit on judgements in flight. Deferred judgements
waiting or running are bounded by ``backlog``: past it, a deferred judgement is
settled at once as ``unavailable`` ("the judge's backlog is full"), so a client
that grades faster than the endpoint answers cannot grow the server's memory
without bound.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from gradebox.pipeline.core import Annotation, Graded
from judge import JudgeResult

if TYPE_CHECKING:
    from gradebox.pipeline.judge import JudgeStage

__all__ = ["JudgeService"]

_BACKLOG_FULL = "the judge's backlog is full; the judgement was not made"

_log = logging.getLogger("gradebox.service")


class JudgeService:
    """One judge stage with a limit on judgements in flight; thread-safe."""

    def __init__(
        self, stage: JudgeStage, *, concurrency: int | None = None, backlog: int = 10_000
    ) -> None:
        """Judge with ``stage`` (the caller closes it), ``concurrency`` at once.

        At most ``backlog`` deferred judgements wait or run at once.
        """
        self.stage = stage
        width = concurrency or (stage.config.concurrency if stage.config else 4)
        self._limit = threading.BoundedSemaphore(width)
        self._backlog = threading.BoundedSemaphore(max(1, backlog))
        self._pool = ThreadPoolExecutor(width, thread_name_prefix="gradebox-judge-later")
        self._closed = threading.Event()

    def upfront(self, graded: Graded) -> Annotation | None:
        """The annotation when the judge is not asked (no code, no spec), else ``None``."""
        planned = self.stage.item(graded)
        return Annotation(planned) if isinstance(planned, JudgeResult) else None

    def annotate(self, graded: Graded) -> Annotation:
        """Judge one sample now (within the limit), as the CLI's stage does."""
        with self._limit:
            try:
                return self.stage.run([graded])[0]
            except Exception as exc:  # as the pipeline does: unavailable, never a verdict
                message = f"judge stage error: {type(exc).__name__}"
                return self.stage.crashed([graded], message)[0]

    def later(self, graded: Graded, done: Callable[[Annotation], Any]) -> Future[None] | None:
        """Judge ``graded`` in the background; ``done(annotation)`` stores the result.

        With the backlog full, ``done`` gets ``unavailable`` at once and ``None`` is
        returned.
        """
        if not self._backlog.acquire(blocking=False):
            _log.warning("the judge's backlog is full: a deferred judgement is unavailable")
            self._store(done, self.stage.crashed([graded], _BACKLOG_FULL)[0])
            return None

        def job() -> None:
            try:
                note = self.annotate(graded)
            finally:
                self._backlog.release()
            if self._closed.is_set():  # the store is closing: the next start settles the row
                return
            self._store(done, note)

        try:
            return self._pool.submit(job)
        except RuntimeError:  # shut down meanwhile: the row stays pending, settled next start
            self._backlog.release()
            return None

    @staticmethod
    def _store(done: Callable[[Annotation], Any], note: Annotation) -> None:
        try:
            done(note)
        except Exception:  # a database error: the row stays pending
            _log.exception("a deferred judgement could not be stored")

    def close(self, *, wait: bool = True) -> None:
        """Stop taking deferred judgements; finish (``wait``) or drop those queued.

        Judgements still running when ``wait`` is false store nothing: their rows stay
        ``pending`` and the next start marks them ``unavailable``.
        """
        if not wait:
            self._closed.set()
        self._pool.shutdown(wait=wait, cancel_futures=not wait)
