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

A patch gate is batch work too: its process runs the repository's tests in
sandboxes of its own, one at a time, so each running gate holds one batch place
(:meth:`Lanes.gate`). It waits for a place as a batch sample does, and while it
waits, a freed place goes to it before the next batch sample (a queue of runs
cannot starve a gate); synchronous grades keep their reserved workers. So grades,
runs and gates together never have more than ``workers`` sandboxes going.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal

__all__ = ["Lane", "Lanes", "Stopped"]

Lane = Literal["sync", "batch"]
"""Where a sample came from: ``POST /v1/grade`` or a run."""


class Stopped(RuntimeError):
    """The app stopped while a gate waited for its place (the gate runs on the next start)."""


class Lanes:
    """Counts synchronous grades and gates in flight and says when batch work may start."""

    def __init__(self, workers: int, reserved: int) -> None:
        """Share ``workers`` sandbox workers; keep ``reserved`` of them for synchronous grades."""
        self.workers = max(1, workers)
        self.batch_jobs = max(1, self.workers - max(0, reserved))
        """Most batch samples in flight at once."""
        self._sync = 0
        self._gates = 0
        """Gates running (each holds one batch place)."""
        self._waiting = 0
        """Gates waiting for a place (the next free place is theirs)."""
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._on_free: Callable[[], None] = lambda: None
        self._samples: Callable[[], int] = lambda: 0

    def on_free(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever a synchronous grade leaves the sandbox."""
        self._on_free = callback

    def count_samples(self, samples: Callable[[], int]) -> None:
        """Read the run worker's batch samples in the sandbox now from ``samples()``."""
        self._samples = samples

    @property
    def samples_inflight(self) -> int:
        """The run worker's batch samples in the sandbox now."""
        return self._samples()

    @property
    def gates_inflight(self) -> int:
        """Gates running now."""
        with self._lock:
            return self._gates

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
            self.freed()

    def freed(self) -> None:
        """A synchronous grade or a batch sample left the sandbox: wake who waits for a place."""
        with self._lock:
            self._changed.notify_all()
        self._on_free()

    def batch_may_start(self, batch_inflight: int) -> bool:
        """Whether the run worker may start one more sample now (a waiting gate goes first)."""
        with self._lock:
            return self._fits(batch_inflight + self._gates + self._waiting)

    def _fits(self, batch: int) -> bool:
        """Whether one more batch job fits beside ``batch`` (lock held)."""
        return batch < self.batch_jobs and batch + self._sync < self.workers

    @contextmanager
    def gate(self, alive: Callable[[], bool], tick_s: float = 1.0) -> Iterator[None]:
        """Hold one batch place while a gate runs; wait for one first.

        Raises:
            Stopped: ``alive()`` said the app stopped while the gate waited.
        """
        with self._lock:
            self._waiting += 1
            try:
                while not self._fits(self._samples() + self._gates):
                    if not alive():
                        raise Stopped("the service stopped")
                    self._changed.wait(tick_s)
            finally:
                self._waiting -= 1
            self._gates += 1
        try:
            yield
        finally:
            with self._lock:
                self._gates -= 1
            self.freed()
