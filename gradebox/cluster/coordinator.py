"""The coordinator side: a :class:`~sandbox.runner.Sandbox` whose workers are a Dask cluster.

:func:`open_cluster` connects to a scheduler (or starts ``local:N`` worker
processes on this machine), waits for workers whose sandboxes proved their
isolation, and returns a :class:`ClusterSandbox`. It has the local sandbox's
surface, so the grader, the suite preparation and every stage after the
sandbox run unchanged in this process: extraction and gate before, comparison,
static layers, judge and verdict after, rows in input order. Only
:meth:`ClusterSandbox.run` differs: it sends a :class:`~gradebox.cluster.worker.CaseJob`
to a worker and waits for its result (samples that wait meanwhile go together, one Dask
task for up to :data:`MAX_BATCH`).

Faults:

* a worker that dies mid-sample: the scheduler runs the sample again on
  another worker, up to its ``allowed-failures``; past that the sample's row
  is an ``infra_error`` (needs review, never a ``fail``);
* a job a worker raises for (no task set, not the right sandbox) is retried
  :data:`RETRIES` times, then ``infra_error``;
* the scheduler gone: this sample and every later one are ``infra_error`` at
  once (``lost`` says why); rows already finished were written as they came.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass
from functools import partial
from typing import Any

import dask
from distributed import Client, KilledWorker, LocalCluster, Security

from gradebox.cluster.address import SchedulerAddress
from gradebox.cluster.tasksets import TaskSetPlugin, arguments_only, taskset_name
from gradebox.cluster.worker import (
    QUIET_HTTP,
    SANDBOX_PLUGIN,
    CaseJob,
    SandboxPlugin,
    SandboxReport,
    WorkerOptions,
    backend_for,
    resource_name,
    run_batch,
    sandbox_report,
)
from gradebox.model import Task
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox
from sandbox.types import HiddenCase, Limits, Observation, RunResult

__all__ = ["RETRIES", "ClusterOptions", "ClusterSandbox", "ClusterUnavailable", "open_cluster"]

RETRIES = 2
"""Times a job a worker raised for is tried again (a dead worker is the scheduler's count)."""
MAX_BATCH = 8
"""Most samples in one Dask task (samples waiting when a task is sent go together)."""
IN_FLIGHT_PER_SLOT = 2 * MAX_BATCH
"""Samples kept in flight per sandbox slot: enough for two full batches per slot, so the
next batch waits on the worker, not on a round trip."""
TASKS_PER_SLOT = 2
"""Dask tasks out at once per sandbox slot: one running, one waiting on the worker."""
MAX_IN_FLIGHT = 1024
"""Most samples in flight (each waits in a thread of the grading pool)."""


class ClusterUnavailable(IsolationUnavailable):
    """No cluster to grade on: the scheduler cannot be reached, or no worker has a proven sandbox.

    Raised by :func:`open_cluster`; the CLI says ``cannot start`` and exits 2.
    """


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """How to reach (or start) the cluster and what its workers must offer."""

    scheduler: SchedulerAddress
    """``local:N`` or a scheduler's address."""
    isolation: str
    """The run's ``--isolation``: workers must have proven this backend."""
    limits: Limits
    """The run's limits (a ``local:N`` worker's warm sandbox is opened with them)."""
    jobs: int
    """Sandbox slots per ``local:N`` worker."""
    python: str | None = None
    """``local:N`` workers' candidate interpreter."""
    security: Security | None = None
    """TLS for a ``tls://`` scheduler (``local:N`` makes its own, for this run only)."""
    wait_s: float = 60.0
    """How long to wait for a worker with a proven sandbox."""


class ClusterSandbox(Sandbox):
    """The cluster as a sandbox: :meth:`run` grades on a worker; see the module docstring.

    It opens no worker process of its own, so ``Sandbox.__init__`` is not called.
    """

    def __init__(
        self,
        client: Client,
        cluster: LocalCluster | None,
        backend: str,
        limits: Limits,
        reports: Sequence[SandboxReport],
    ) -> None:
        self.backend = backend
        self.isolated = backend != "none"
        self.limits = limits
        self.python = "; ".join(sorted({r.python for r in reports}))
        self.slots = sum(r.slots for r in reports)
        versions = sorted({r.python_version for r in reports if r.python_version})
        self._version = "; ".join(versions) or None
        self._client = client
        self._cluster = cluster
        self._resource = resource_name(backend)
        self._run = uuid.uuid4().hex[:12]
        self._sets: dict[int, tuple[Sequence[HiddenCase], str]] = {}
        self._sets_lock = threading.Lock()
        self._names: list[str] = []
        self._closed = False
        self.lost: str | None = None
        """Why the cluster went away mid-run, once it has."""
        self._waiting: queue.SimpleQueue[_Waiting | None] = queue.SimpleQueue()
        self._room = threading.Semaphore(max(1, self.slots * TASKS_PER_SLOT))
        self._dispatcher = threading.Thread(
            target=self._dispatch, name="gradebox-cluster-dispatch", daemon=True
        )
        self._dispatcher.start()

    @property
    def python_version(self) -> str | None:
        """``sys.version`` inside the workers' sandboxes (distinct values joined)."""
        return self._version

    @property
    def in_flight(self) -> int:
        """How many samples to keep submitted at once."""
        return max(1, min(MAX_IN_FLIGHT, self.slots * IN_FLIGHT_PER_SLOT))

    @property
    def scheduler_address(self) -> str:
        """The scheduler's address."""
        return str(self._client.scheduler_info()["address"])

    def run(
        self, code: str, fn: str, cases: Sequence[HiddenCase], limits: Limits | None = None
    ) -> RunResult:
        """Run every case against one candidate on a worker; never raises for the candidate."""
        t0 = time.monotonic()
        if self.lost is not None:
            return _infra(cases, self.lost, t0)
        if self._closed:
            return _infra(cases, "the cluster sandbox is closed", t0)
        task = cases[0].task if cases else fn  # the set's key: tasks may share an entry point
        try:
            name = self._taskset(task, cases)
        except Exception as exc:  # the scheduler refused or went away: ours, not the candidate's
            return self._failed(cases, exc, t0)
        waiter: Future[RunResult] = Future()
        job = CaseJob(name, fn, code, limits or self.limits, self.backend, task)
        self._waiting.put((job, waiter))
        if self._closed:  # closed meanwhile: the dispatcher may be gone
            self._drain()
        try:
            result = waiter.result()
        except Exception as exc:
            return self._failed(cases, exc, t0)
        if not isinstance(result, RunResult) or len(result.observations) != len(cases):
            return _infra(cases, "a worker sent a malformed result", t0)
        return result

    def _dispatch(self) -> None:
        """Send waiting samples to the cluster, up to :data:`MAX_BATCH` per task.

        It never waits for a batch to fill: a lone sample goes alone, at once. At most
        :data:`TASKS_PER_SLOT` tasks per slot are out at a time; samples that arrive while
        they are go together in the next one.
        """
        while True:
            first = self._waiting.get()
            if first is None:
                self._drain()
                return
            self._room.acquire()  # samples queue up meanwhile: they go as one batch
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    more = self._waiting.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._waiting.put(None)
                    break
                batch.append(more)
            self._submit(batch)

    def _drain(self) -> None:
        """Closed: samples still waiting get an error (their rows say infra_error)."""
        while True:
            try:
                item = self._waiting.get_nowait()
            except queue.Empty:
                return
            if item is not None:
                item[1].set_exception(RuntimeError("the cluster sandbox is closed"))

    def _submit(self, batch: list[_Waiting]) -> None:
        try:
            future = self._client.submit(
                run_batch,
                tuple(job for job, _ in batch),
                key=f"gradebox-batch-{uuid.uuid4().hex}",
                resources={self._resource: 1},
                retries=RETRIES,
                pure=False,
            )
        except Exception as exc:  # the client is closed: the scheduler went away
            self._room.release()
            for _, waiter in batch:
                waiter.set_exception(exc)
            return
        future.add_done_callback(partial(_settle, batch, self._room))

    def self_check(self) -> None:
        """Every worker proved its own sandbox before it advertised a slot: nothing to add."""

    def warm(self) -> int:
        """The cluster's sandbox slots (its workers are warm when they advertise them)."""
        return self.slots

    def close(self) -> None:
        """Drop this run's task sets from the workers; disconnect (stop a ``local:N`` cluster)."""
        if self._closed:
            return
        self._closed = True
        self._waiting.put(None)
        with self._sets_lock:
            names, self._names = self._names, []
            self._sets.clear()
        if self.lost is None:
            for name in names:
                try:
                    self._client.unregister_worker_plugin(name)
                except Exception:  # noqa: S112 - best effort: the scheduler may be gone
                    continue
        self._client.close(timeout=5)
        if self._cluster is not None:
            self._cluster.close(timeout=10)

    def preload(self, tasks: Mapping[str, Task]) -> None:
        """Send every task's set to the workers now, in one plugin (one round trip for all).

        Cases :meth:`run` is later called with that are not these (the suite
        preparation's own) are registered when first seen, once each.
        """
        sets = {t.cases[0].task if t.cases else tid: t.cases for tid, t in tasks.items()}
        with self._sets_lock:
            fresh = {tid: c for tid, c in sets.items() if id(c) not in self._sets}
            if not fresh:
                return
            self._register(fresh)

    def _taskset(self, task: str, cases: Sequence[HiddenCase]) -> str:
        """The registered set for ``cases`` (registered now, once, if it is new)."""
        with self._sets_lock:
            known = self._sets.get(id(cases))
            if known is not None and known[0] is cases:
                return known[1]
            return self._register({task: cases})

    def _register(self, sets: Mapping[str, Sequence[HiddenCase]]) -> str:
        sent = {tid: arguments_only(cases) for tid, cases in sets.items()}
        name = taskset_name(self._run, sent)
        self._client.register_plugin(TaskSetPlugin(name, sent), name=name)
        self._names.append(name)
        for cases in sets.values():
            self._sets[id(cases)] = (cases, name)  # holding ``cases`` keeps its id unique
        return name

    def _failed(self, cases: Sequence[HiddenCase], exc: Exception, t0: float) -> RunResult:
        if isinstance(exc, KilledWorker):
            return _infra(cases, "the workers grading this sample died (too many times)", t0)
        if isinstance(exc, CancelledError | OSError | TimeoutError) or self._client.status in (
            "closed",
            "closing",
        ):
            self.lost = f"the scheduler went away ({type(exc).__name__})"
            return _infra(cases, self.lost, t0)
        return _infra(cases, f"worker error: {type(exc).__name__}: {exc}", t0)


_Waiting = tuple[CaseJob, "Future[RunResult]"]
"""A sample waiting for the cluster, and the future its grading thread waits on."""


def _settle(batch: list[_Waiting], room: threading.Semaphore, future: Any) -> None:
    """Hand each sample of a finished batch its result, or the batch's exception."""
    room.release()
    try:
        results = future.result()
        if not isinstance(results, tuple) or len(results) != len(batch):
            raise TypeError("a worker sent a malformed batch result")
    except Exception as exc:
        for _, waiter in batch:
            waiter.set_exception(exc)
        return
    finally:
        future.release()
    for (_, waiter), result in zip(batch, results, strict=True):
        waiter.set_result(result)


def _infra(cases: Sequence[Any], message: str, t0: float) -> RunResult:
    return RunResult(
        observations=tuple(Observation("not_run") for _ in cases),
        wall_s=time.monotonic() - t0,
        infra_error=message[:300],
    )


def open_cluster(options: ClusterOptions) -> ClusterSandbox:
    """Reach the cluster and wait for workers with a proven sandbox of the run's backend.

    Raises:
        ClusterUnavailable: The scheduler cannot be reached, or no worker offers a
            proven sandbox of the backend the run needs within ``wait_s``.
        IsolationUnavailable: A ``local:N`` worker's sandbox failed its self-check.
    """
    backend = backend_for(options.isolation)
    cluster = None
    try:
        if options.scheduler.local_workers is not None:
            cluster, client = _start_local(options)
        else:
            address = str(options.scheduler.address)
            try:
                client = Client(address, security=options.security, timeout=options.wait_s)
            except (OSError, TimeoutError, ValueError, TypeError) as exc:
                raise ClusterUnavailable(f"cannot reach the scheduler at {address}: {exc}") from exc
        try:
            reports = _ready_workers(client, backend, options.wait_s)
        except BaseException:
            client.close()
            raise
    except BaseException:
        if cluster is not None:
            cluster.close()
        raise
    return ClusterSandbox(client, cluster, backend, options.limits, reports)


def _start_local(options: ClusterOptions) -> tuple[LocalCluster, Client]:
    """``local:N``: N worker processes on loopback, TLS with a certificate made for this run."""
    security = Security.temporary()
    with dask.config.set(QUIET_HTTP):  # the workers it spawns take this configuration along
        cluster = LocalCluster(
            n_workers=options.scheduler.local_workers,
            threads_per_worker=options.jobs,
            processes=True,
            host="127.0.0.1",
            security=security,
            dashboard_address="127.0.0.1:0",
            silence_logs=logging.ERROR,
        )
    try:
        client = Client(cluster, security=security)
        plugin = SandboxPlugin(
            WorkerOptions(options.isolation, options.jobs, options.python, options.limits)
        )
        client.register_plugin(plugin, name=SANDBOX_PLUGIN)
    except BaseException:
        cluster.close()
        raise
    return cluster, client


def _ready_workers(client: Client, backend: str, wait_s: float) -> list[SandboxReport]:
    """Reports of the workers advertising a proven ``backend`` sandbox (waits for one)."""
    want = resource_name(backend)
    deadline = time.monotonic() + wait_s
    while True:
        workers = client.scheduler_info(n_workers=-1)["workers"]
        ready = [a for a, w in workers.items() if w.get("resources", {}).get(want, 0) > 0]
        if ready:
            found = client.run(sandbox_report, workers=ready)
            reports = [r for r in found.values() if isinstance(r, SandboxReport)]
            if reports:
                return reports
        if time.monotonic() > deadline:
            raise ClusterUnavailable(
                f"no worker offers a proven {backend!r} sandbox after {wait_s:g} s "
                f"({len(workers)} workers connected; start workers with "
                f"'gradebox worker ADDRESS --isolation {backend}', and see the scheduler's "
                f"'gradebox' events for workers that refused)"
            )
        time.sleep(0.2)
