"""Two lanes over the sandbox's workers: synchronous grades first, batch runs after.

The sandbox has ``workers`` isolated workers, shared by ``POST /v1/grade`` and
the run worker. A synchronous grade must never wait behind a queued run, so:

- ``reserved`` workers (default 1) are never taken by batch samples: the run
  worker keeps at most ``workers - reserved`` samples in flight (at least one),
  and a synchronous grade finds a free worker at once;
- and the run worker yields: it starts no new sample while batch samples and
  synchronous grades in flight already fill every worker. A burst of
  synchronous grades thus takes the workers over as batch samples finish, and
  the run resumes when the burst is over (:meth:`Lanes.sync` wakes it).

A batch sample already in flight is never stopped: with ``workers`` at 1 (no
worker to reserve), a synchronous grade waits for at most the one batch sample
in flight, never for the queue.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal

__all__ = ["Lane", "Lanes"]

Lane = Literal["sync", "batch"]
"""Where a sample came from: ``POST /v1/grade`` or a run."""


class Lanes:
    """Counts synchronous grades in flight and says when a batch sample may start."""

    def __init__(self, workers: int, reserved: int) -> None:
        """Share ``workers`` sandbox workers; keep ``reserved`` of them for synchronous grades."""
        self.workers = max(1, workers)
        self.batch_jobs = max(1, self.workers - max(0, reserved))
        """Most batch samples in flight at once."""
        self._sync = 0
        self._lock = threading.Lock()
        self._on_free: Callable[[], None] = lambda: None

    def on_free(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever a synchronous grade leaves the sandbox."""
        self._on_free = callback

    @property
    def sync_inflight(self) -> int:
        """Synchronous grades in extract, gate or the sandbox now."""
        with self._lock:
            return self._sync

    @contextmanager
    def sync(self) -> Iterator[None]:
        """Hold the synchronous lane while a grade needs the sandbox."""
        with self._lock:
            self._sync += 1
        try:
            yield
        finally:
            with self._lock:
                self._sync -= 1
            self._on_free()

    def batch_may_start(self, batch_inflight: int) -> bool:
        """Whether the run worker may start one more sample now."""
        with self._lock:
            sync = self._sync
        return batch_inflight < self.batch_jobs and batch_inflight + sync < self.workers
