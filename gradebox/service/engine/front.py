"""Extract and gate for the service, in a pool of worker processes.

Why processes: ``ast.parse`` and ``compile`` hold the GIL for a whole parse, so
in a thread one client's 128 KiB sample that is slow to gate stalls every other
thread of the server meanwhile, whatever its time budget. In a worker process
it costs that worker only, and a sample past its budget is not merely dropped:
its worker is killed (SIGTERM ends it at once, mid-parse, on pebble's next 0.1 s
tick) and replaced, so it stops costing CPU too.

The pool is :class:`pebble.ProcessPool` on the ``forkserver`` start method:
workers are forked from a clean server process, so they inherit none of the
service's threads, sockets, database handles or sandbox pipes. The server
preloads the grader (when this process starts it first), so a new worker,
also one replacing a killed worker, is ready in well under a second; each runs one
trivial front before it takes samples, and :meth:`FrontPool.start` returns once
every worker has. Jobs and results are frozen records
(:class:`~gradebox.pipeline.tests.FrontJob`, :class:`~gradebox.pipeline.tests.FrontResult`).

Candidate code is parsed here, never run: the workers are no sandbox, and need
none.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import CancelledError
from dataclasses import dataclass
from multiprocessing.synchronize import Semaphore
from typing import Literal

from pebble import ProcessExpired, ProcessPool

from gradebox.pipeline.tests import FrontJob, FrontResult, check_front, warm_front

__all__ = ["FrontFailure", "FrontPool"]


@dataclass(frozen=True, slots=True)
class FrontFailure:
    """Why a sample's extract and gate gave no result (the sample is then not graded)."""

    reason: Literal["budget", "worker_died", "closed"]
    """``budget``: not done within its time budget (its worker was killed);
    ``worker_died``: its worker exited while on it; ``closed``: the pool is shut down."""
    message: str
    """One line for the log (clients see a fixed infra message)."""


class FrontPool:
    """Worker processes that run :func:`~gradebox.pipeline.tests.check_front`; thread-safe."""

    def __init__(self, workers: int) -> None:
        """Make a pool of ``workers`` processes; nothing starts before :meth:`start`."""
        context = multiprocessing.get_context("forkserver")
        # Only takes effect if this process has not started its fork server yet.
        context.set_forkserver_preload(["__main__", "gradebox.pipeline.tests"])
        self._workers = workers
        self._ready: Semaphore | None = context.Semaphore(0)
        self._pool: ProcessPool | None = ProcessPool(
            max_workers=workers,
            initializer=warm_front,
            initargs=(self._ready,),
            context=context,
        )

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the workers and wait until each can take a sample.

        Raises:
            RuntimeError: The workers did not start within ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        if self._pool is None or not self._pool.active:  # reading ``active`` starts a new pool
            raise RuntimeError("extract and gate's process pool did not start")
        ready = self._ready
        for _ in range(self._workers):
            if ready is None or not ready.acquire(timeout=max(0.0, deadline - time.monotonic())):
                raise RuntimeError(f"extract and gate's workers not ready within {timeout_s} s")

    def check(self, job: FrontJob, budget_s: float) -> FrontResult | FrontFailure:
        """Extract and gate ``job`` in a worker within ``budget_s`` seconds, waiting included.

        Raises:
            Exception: Whatever :func:`~gradebox.pipeline.tests.check_front` raised (a grader bug).
        """
        pool = self._pool
        try:
            if pool is None:
                raise RuntimeError("the pool is closed")
            future = pool.schedule(check_front, args=(job,), timeout=budget_s)
        except RuntimeError as exc:  # "The Pool is not active": shut down, or broken
            return FrontFailure("closed", f"extract and gate are not available: {exc}")
        try:
            return future.result(timeout=budget_s)
        except (TimeoutError, CancelledError):
            # Queued: dropped. Running: its worker is killed within pebble's 0.1 s tick.
            future.cancel()  # type: ignore[no-untyped-call]  # pebble leaves it untyped
            return FrontFailure("budget", "extract and gate did not finish within their budget")
        except ProcessExpired as exc:
            return FrontFailure("worker_died", f"the extract and gate worker died ({exc.exitcode})")

    def close(self) -> None:
        """Stop the workers (a sample still in one runs out its budget); idempotent."""
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()  # type: ignore[no-untyped-call]  # pebble leaves it untyped
            pool.join()  # SIGTERM, then SIGKILL after 3 s, per worker
        # Dropped, the semaphore is unlinked now: uvicorn ends by re-raising SIGTERM,
        # and atexit (which would unlink it) never runs then.
        del pool
        self._ready = None
