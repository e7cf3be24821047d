"""Samples checked together: one key's (token's) waiting samples per batch, sessions shared.

:class:`Batcher` has no thread of its own; see its docstring. The static layers
(:mod:`.static`) check each batch in a warm session process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Generic, TypeVar

__all__ = ["MAX_BATCH", "WINDOW_S", "Batcher"]

MAX_BATCH = 16
"""Most samples checked in one batch."""
WINDOW_S = 0.05
"""Longest a batch waits for samples of its key on their way (:meth:`Batcher.expecting`)."""
_TICKET: ContextVar[list[str] | None] = ContextVar("gradebox_static_ticket", default=None)
"""The key this thread's sample was announced under, until it joins the queue."""
T = TypeVar("T")
R = TypeVar("R")


@dataclasses.dataclass(slots=True)
class _Job(Generic[T, R]):
    """One sample waiting for its result."""

    key: str
    item: T
    since: float = dataclasses.field(default_factory=time.monotonic)
    result: R | None = None
    error: BaseException | None = None
    done: bool = False


class Batcher(Generic[T, R]):
    """Sessions shared by threads; samples of one key that wait together run as a batch.

    No thread of its own: a caller that finds a free session checks the oldest
    ready key's waiting samples (up to :data:`MAX_BATCH`), and so on until its
    own samples are done; the others wait for it. ``run(key, items)`` checks
    one batch in a session (one result per item, in order).

    A key is ready unless samples of it were announced (:meth:`expecting`: they
    are in the sandbox now) and have not joined the queue yet: then its batch
    waits for them, :data:`WINDOW_S` at most from its oldest sample's arrival,
    since each tool call costs ~80 ms of CPU whatever the batch's size. A key
    with nothing on its way (one client alone) never waits.
    """

    def __init__(
        self, run: Callable[[str, list[T]], list[R]], sessions: int, window_s: float = WINDOW_S
    ) -> None:
        self._run = run
        self._free = sessions
        self._window_s = window_s
        self._waiting: deque[_Job[T, R]] = deque()
        self._coming: dict[str, int] = {}
        """Per key: samples announced that have not joined the queue yet."""
        self._cond = threading.Condition()
        self.observe: Callable[[int], None] = lambda _size: None
        """Told each batch's size (the app's metrics)."""

    @contextlib.contextmanager
    def expecting(self, key: str) -> Iterator[None]:
        """Announce one sample of ``key`` that this thread may check within the block."""
        ticket = [key]
        with self._cond:
            self._coming[key] = self._coming.get(key, 0) + 1
        token = _TICKET.set(ticket)
        try:
            yield
        finally:
            _TICKET.reset(token)
            if ticket:  # it never joined the queue: stop waiting for it
                with self._cond:
                    self._arrived(key)
                    self._cond.notify_all()

    def _arrived(self, key: str) -> None:
        left = self._coming.get(key, 0) - 1
        if left > 0:
            self._coming[key] = left
        else:
            self._coming.pop(key, None)

    def check(self, key: str, items: list[T]) -> list[R]:
        """Check ``items`` of ``key`` (in some batch); their results, in order."""
        jobs = [_Job[T, R](key, item) for item in items]
        ticket = _TICKET.get()
        with self._cond:
            if ticket == [key]:
                ticket.clear()
                self._arrived(key)
            self._waiting.extend(jobs)
            self._cond.notify_all()
            while not all(j.done for j in jobs):
                ready, wait_s = self._ready() if self._free else (None, None)
                if ready is not None:
                    self._run_one_batch(ready)
                else:
                    self._cond.wait(wait_s)
        for job in jobs:
            if job.error is not None:
                raise job.error
        return [j.result for j in jobs if j.result is not None]

    def _ready(self) -> tuple[str | None, float | None]:
        """The oldest ready key, or how long until the first waiting key is (lock held)."""
        now, soonest = time.monotonic(), None
        counts: dict[str, int] = {}
        for job in self._waiting:
            counts[job.key] = counts.get(job.key, 0) + 1
        first: dict[str, float] = {}
        for job in self._waiting:
            first.setdefault(job.key, job.since)
        for key, since in first.items():
            due = since + self._window_s
            if not self._coming.get(key) or counts[key] >= MAX_BATCH or due <= now:
                return key, None
            soonest = due - now if soonest is None else min(soonest, due - now)
        return None, soonest

    def _run_one_batch(self, key: str) -> None:
        """Check one batch of ``key`` (called holding the condition; released while checking)."""
        self._free -= 1
        batch = [j for j in self._waiting if j.key == key][:MAX_BATCH]
        for job in batch:
            self._waiting.remove(job)
        self._cond.release()
        try:
            self.observe(len(batch))
            for job, result in zip(batch, self._run(key, [j.item for j in batch]), strict=True):
                job.result = result
        except BaseException as exc:  # every sample of the batch gets the error (infra)
            for job in batch:
                job.error = exc
        finally:
            self._cond.acquire()
            self._free += 1
            for job in batch:
                job.done = True
            self._cond.notify_all()
