"""Extract and gate for the service, in a pool of worker processes.

Why processes: ``ast.parse`` and ``compile`` hold the GIL for a whole parse, so
in a thread one client's 128 KiB sample that is slow to gate stalls every other
thread of the server meanwhile, whatever its time budget. In a worker process
it costs that worker only, and a sample past its budget is not merely dropped:
its worker is killed (SIGTERM ends it at once, mid-parse) and replaced, so it
stops costing CPU too.

Workers are started on the ``forkserver`` start method: forked from a clean
server process, so they inherit none of the service's threads, sockets, database
handles or sandbox pipes. The fork server preloads the grader and this module
(when this process starts it first), so a new worker, also one replacing a
killed worker, is ready in well under a second; each runs one trivial front
before it takes samples, and :meth:`FrontPool.start` returns once every worker
has. Jobs and results are frozen records
(:class:`~gradebox.pipeline.tests.FrontJob`, :class:`~gradebox.pipeline.tests.FrontResult`).

Each worker keeps one pipe to the server for its life, and the thread grading a
sample talks to a free worker over it directly: one job out, one result back,
no helper thread in between. Written here rather than with :mod:`pebble` (which
the static sessions use): pebble's pool hands each job to a scheduler thread and
each result to a manager thread, two thread hops and futures per sample, which
cost the server about 0.4 ms of CPU per grade (``bench/service.py``); the
standard library's pools cannot kill the worker of one job past its budget.

Candidate code is parsed here, never run: the workers are no sandbox, and need
none.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import queue
import select
import signal
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Literal

from gradebox.pipeline.tests import FrontJob, FrontResult, check_front

__all__ = ["FrontFailure", "FrontPool"]

_log = logging.getLogger("gradebox.service")
_WARM = FrontJob("f", None, "def f():\n    return 1\n", None, (), False, False)
"""A trivial sample each worker checks before it says it is ready (imports, caches)."""


@dataclass(frozen=True, slots=True)
class FrontFailure:
    """Why a sample's extract and gate gave no result (the sample is then not graded)."""

    reason: Literal["budget", "worker_died", "closed"]
    """``budget``: not done within its time budget (its worker was killed);
    ``worker_died``: its worker exited while on it; ``closed``: the pool is shut down."""
    message: str
    """One line for the log (clients see a fixed infra message)."""


@dataclass(frozen=True, slots=True, eq=False)
class _Worker:
    process: BaseProcess
    conn: Connection
    """The server's end of the worker's pipe: a :class:`FrontJob` in, a reply out."""
    readable: select.poll
    """Polls ``conn`` (one object per worker, made once: ``Connection.poll`` builds a
    selector per call)."""

    def wait(self, timeout_s: float) -> bool:
        """Whether a reply (or the end of the pipe) arrived within ``timeout_s``."""
        return bool(self.readable.poll(max(0, math.ceil(timeout_s * 1000))))


def _serve(conn: Connection) -> None:
    """A worker's life: warm up, say ready, then check one job at a time until the pipe closes.

    SIGTERM ends it at once: a Python handler would only run after a parse in
    progress (up to seconds), and the worker holds nothing that needs cleaning up.
    """
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    check_front(_WARM)
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except EOFError:  # the server closed the pipe or is gone
            return
        try:
            reply: tuple[str, object] = ("ok", check_front(job))
        except Exception as exc:  # a grader bug: raised again in the server
            reply = ("error", exc)
        conn.send(reply)


class FrontPool:
    """Worker processes that run :func:`~gradebox.pipeline.tests.check_front`; thread-safe."""

    def __init__(self, workers: int) -> None:
        """Make a pool of ``workers`` processes; nothing starts before :meth:`start`."""
        self._context = multiprocessing.get_context("forkserver")
        # Only takes effect if this process has not started its fork server yet.
        self._context.set_forkserver_preload(["__main__", "gradebox.pipeline.tests", __name__])
        self._workers = workers
        self._idle: queue.SimpleQueue[_Worker | None] = queue.SimpleQueue()
        self._live: set[_Worker] = set()
        self._lock = threading.Lock()
        self._closed = False

    def start(self, timeout_s: float = 60.0) -> None:
        """Start the workers and wait until each can take a sample.

        Raises:
            RuntimeError: The workers did not start within ``timeout_s``.
        """
        deadline = time.monotonic() + timeout_s
        try:
            started = [self._spawn() for _ in range(self._workers)]  # they warm up together
        except (OSError, RuntimeError) as exc:
            raise RuntimeError(f"extract and gate's process pool did not start: {exc}") from exc
        for worker in started:
            if not self._ready(worker, deadline):
                raise RuntimeError(f"extract and gate's workers not ready within {timeout_s} s")
            self._idle.put(worker)

    def check(self, job: FrontJob, budget_s: float) -> FrontResult | FrontFailure:
        """Extract and gate ``job`` in a worker within ``budget_s`` seconds, waiting included.

        Raises:
            Exception: Whatever :func:`~gradebox.pipeline.tests.check_front` raised (a grader bug).
        """
        deadline = time.monotonic() + budget_s
        try:
            worker = self._idle.get(timeout=max(0.0, budget_s))
        except queue.Empty:  # every worker busy for the whole budget: dropped
            return FrontFailure("budget", "extract and gate did not finish within their budget")
        if worker is None:
            self._idle.put(None)  # for the next caller
            return FrontFailure("closed", "extract and gate are not available: the pool is closed")
        try:
            worker.conn.send(job)
            if not worker.wait(deadline - time.monotonic()):
                self._replace(worker)  # killed now, mid-parse: it stops costing CPU
                return FrontFailure("budget", "extract and gate did not finish within their budget")
            tag, value = worker.conn.recv()
        except (EOFError, OSError):
            if self._closed:
                self._replace(worker)
                return FrontFailure("closed", "extract and gate are not available: the pool closed")
            worker.process.join(1.0)  # read its exit code before another thread reaps it
            code = worker.process.exitcode
            self._replace(worker)
            return FrontFailure("worker_died", f"the extract and gate worker died ({code})")
        except BaseException:  # its pipe may hold half a message: a fresh worker instead
            self._replace(worker)
            raise
        self._idle.put(worker)
        if tag == "error" and isinstance(value, Exception):
            raise value
        result: FrontResult = value
        return result

    def close(self) -> None:
        """Stop the workers (a sample still in one gets ``closed``); idempotent."""
        with self._lock:
            self._closed = True
            workers, self._live = self._live, set()
        self._idle.put(None)
        for worker in workers:
            worker.process.terminate()
        for worker in workers:
            _reap(worker)

    def _spawn(self) -> _Worker:
        ours, theirs = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_serve, args=(theirs,), name="gradebox-front", daemon=True
        )
        process.start()
        theirs.close()  # the worker's end lives in the worker: EOF here when it dies
        readable = select.poll()
        readable.register(ours.fileno(), select.POLLIN)
        worker = _Worker(process, ours, readable)
        with self._lock:
            closed = self._closed
            if not closed:
                self._live.add(worker)
        if closed:
            process.terminate()
            _reap(worker)
            ours.close()
            raise RuntimeError("the pool is closed")
        return worker

    def _ready(self, worker: _Worker, deadline: float) -> bool:
        try:
            return worker.conn.poll(max(0.0, deadline - time.monotonic())) and (
                worker.conn.recv() == "ready"
            )
        except (EOFError, OSError):
            return False

    def _replace(self, worker: _Worker) -> None:
        """Kill ``worker`` now; start one in its place in the background (unless closed)."""
        worker.process.terminate()
        with self._lock:
            self._live.discard(worker)
        threading.Thread(
            target=self._respawn, args=(worker,), name="gradebox-front-respawn", daemon=True
        ).start()

    def _respawn(self, dead: _Worker) -> None:
        _reap(dead)
        dead.conn.close()  # its caller is done with it
        if self._closed:
            return
        try:
            worker = self._spawn()
        except (OSError, RuntimeError) as exc:
            if not self._closed:
                _log.error("an extract and gate worker could not be replaced: %s", exc)
            return
        if self._ready(worker, time.monotonic() + 60.0):
            self._idle.put(worker)
            return
        _log.error("a replacement extract and gate worker did not start")  # the pool shrinks
        worker.process.terminate()
        with self._lock:
            self._live.discard(worker)
        _reap(worker)


def _reap(worker: _Worker) -> None:
    """Wait for a terminated worker (SIGKILL after 3 s).

    Its pipe is left to the garbage collector: a thread may still be reading it.
    """
    worker.process.join(3.0)
    if worker.process.is_alive():
        worker.process.kill()
        worker.process.join()
