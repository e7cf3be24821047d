"""The worker side: one warm sandbox per Dask worker, and the work it is sent.

A :class:`SandboxPlugin` opens a :class:`~sandbox.runner.Sandbox` when its
worker starts and proves its isolation (the sandbox's own self-check) before
the worker takes any grading work: only then does the worker advertise the
Dask resource :func:`resource_name` of its backend, and grading work asks for
that resource, so it never reaches a worker whose sandbox is not proven (nor a
``none`` worker when the run asked for isolation). A worker whose self-check
fails says why in the scheduler's event log (topic :data:`EVENT_TOPIC`) and
advertises nothing.

Per sample, the coordinator submits :func:`run_cases` with a small
:class:`CaseJob` (code, task name, limits and the name of the run's task set):
the function finds the warm sandbox and the task set on its worker by name
and returns the sandbox's :class:`~sandbox.types.RunResult`; the comparison
with expected values happens back in the coordinator.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from dataclasses import dataclass, field
from pathlib import Path

import dask
from distributed import Security, Worker, WorkerPlugin, get_worker

from gradebox.cluster.tasksets import TaskSetPlugin
from sandbox.backends import get_backend
from sandbox.errors import IsolationUnavailable
from sandbox.runner import Sandbox, open_sandbox
from sandbox.types import HiddenCase, Limits, Observation, RunResult

__all__ = [
    "EVENT_TOPIC",
    "QUIET_HTTP",
    "SANDBOX_PLUGIN",
    "CaseJob",
    "MissingTaskSet",
    "Refused",
    "SandboxPlugin",
    "SandboxReport",
    "WorkerOptions",
    "resource_name",
    "run_batch",
    "run_cases",
    "run_worker",
    "sandbox_report",
    "worker_security",
]

SANDBOX_PLUGIN = "gradebox-sandbox"
"""The name the sandbox plugin has on every worker."""
EVENT_TOPIC = "gradebox"
"""The scheduler's event-log topic of gradebox workers (``ready``, ``refused``)."""
QUIET_HTTP = {
    "distributed.scheduler.http.routes": ["distributed.http.health"],
    "distributed.worker.http.routes": ["distributed.http.health"],
}
"""Dask configuration for the processes gradebox starts: their plain-HTTP servers (which
TLS does not cover) answer ``/health`` only, on loopback; no task, worker or metrics pages."""
MAX_SANDBOXES = 4
"""Most sandboxes (distinct limits) one worker keeps open at once."""
_NOT_RUN = Observation("not_run")


def resource_name(backend: str) -> str:
    """The Dask resource a worker with a proven ``backend`` sandbox advertises."""
    return f"gradebox-sandbox-{backend}"


def backend_for(isolation: str) -> str:
    """The backend an ``--isolation`` value means (``auto`` is bubblewrap or refuse)."""
    return get_backend(isolation).name


class Refused(Exception):
    """A worker will not run this job (no proven sandbox, or not the backend asked for)."""


class MissingTaskSet(Exception):
    """The job names a task set this worker does not hold (retried, then an infra row)."""


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    """How a worker's sandbox is opened."""

    isolation: str = "auto"
    """``auto``, ``bwrap`` or ``none``."""
    jobs: int = 1
    """Sandbox slots: candidates this worker grades at once."""
    python: str | None = None
    """The interpreter that runs candidates; ``None`` for the system one."""
    limits: Limits = field(default_factory=Limits)
    """The limits the warm sandbox is opened with (a run with others opens its own)."""


@dataclass(frozen=True, slots=True)
class CaseJob:
    """One sample's sandbox work, as shipped to a worker: no hidden case inside."""

    taskset: str
    """The plugin name of the run's task set for ``task``."""
    fn: str
    """The task's entry point (the function the cases call)."""
    code: str
    """The candidate's extracted code."""
    limits: Limits
    """The run's limits."""
    backend: str
    """The isolation backend the run requires (``bwrap``, ``none``)."""
    task: str = ""
    """The task's id: the key of its cases in the set (tasks may share ``fn``)."""

    def __post_init__(self) -> None:
        """Fill in the task id of a job that names none: its entry point."""
        if not self.task:
            object.__setattr__(self, "task", self.fn)


@dataclass(frozen=True, slots=True)
class SandboxReport:
    """What a worker's sandbox is, for the run's manifest and fingerprint."""

    backend: str
    """Its isolation backend."""
    slots: int
    """Candidates it grades at once."""
    python: str
    """The interpreter that runs candidates."""
    python_version: str | None
    """``sys.version`` inside the sandbox, as its workers reported it."""


class SandboxPlugin(WorkerPlugin):
    """Opens and self-checks the worker's sandbox; runs :class:`CaseJob` in it.

    Args:
        options: How to open the sandbox.
    """

    name = SANDBOX_PLUGIN

    def __init__(self, options: WorkerOptions) -> None:
        self.options = options
        self.backend = backend_for(options.isolation)
        self._sandboxes: dict[Limits, Sandbox] = {}
        self._lock: threading.Lock | None = None

    async def setup(self, worker: Worker) -> None:
        """Open the sandbox (self-check included), then advertise it; or log why not.

        Raises:
            IsolationUnavailable: The sandbox cannot start or its isolation does not hold.
        """
        self._lock = threading.Lock()
        opts = self.options
        loop = asyncio.get_running_loop()
        try:
            sandbox = await loop.run_in_executor(None, self._open, opts.limits)
        except IsolationUnavailable as exc:
            worker.log_event(EVENT_TOPIC, {"event": "refused", "why": str(exc)[:2000]})
            raise
        self._sandboxes[opts.limits] = sandbox
        await worker.set_resources(**{resource_name(sandbox.backend): opts.jobs})
        worker.log_event(
            EVENT_TOPIC, {"event": "ready", "backend": sandbox.backend, "slots": opts.jobs}
        )

    def teardown(self, worker: Worker) -> None:
        """Stop every sandbox worker process."""
        sandboxes, self._sandboxes = list(self._sandboxes.values()), {}
        for sandbox in sandboxes:
            sandbox.close()

    def report(self) -> SandboxReport | None:
        """What this worker's warm sandbox is (``None`` before it is proven)."""
        sandbox = self._sandboxes.get(self.options.limits)
        if sandbox is None:
            return None
        return SandboxReport(
            sandbox.backend, self.options.jobs, sandbox.python, sandbox.python_version
        )

    def run(self, job: CaseJob, cases: tuple[HiddenCase, ...]) -> RunResult:
        """Run ``cases`` against the job's code in this worker's sandbox.

        Raises:
            Refused: No proven sandbox here, or not the backend the run requires.
        """
        self.check(job)
        try:
            sandbox = self._sandbox_for(job.limits)
        except IsolationUnavailable as exc:
            message = f"this worker cannot open a sandbox with the run's limits: {exc}"
            return RunResult((_NOT_RUN,) * len(cases), infra_error=message[:300])
        return sandbox.run(job.code, job.fn, cases, job.limits)

    def check(self, job: CaseJob) -> None:
        """Refuse a job this worker must not run.

        Raises:
            Refused: No proven sandbox here, or not the backend the run requires.
        """
        if self._lock is None or not self._sandboxes:
            raise Refused("this worker's sandbox has not proven its isolation")
        if job.backend != self.backend:
            raise Refused(
                f"this worker's sandbox is {self.backend!r}; the run needs {job.backend!r}"
            )

    def _sandbox_for(self, limits: Limits) -> Sandbox:
        assert self._lock is not None  # noqa: S101 - set in setup, checked by run
        with self._lock:
            sandbox = self._sandboxes.get(limits)
            if sandbox is None:
                if len(self._sandboxes) >= MAX_SANDBOXES:
                    raise IsolationUnavailable(f"{MAX_SANDBOXES} sandboxes already open")
                sandbox = self._open(limits)
                self._sandboxes[limits] = sandbox
            return sandbox

    def _open(self, limits: Limits) -> Sandbox:
        opts = self.options
        return open_sandbox(opts.isolation, limits, workers=opts.jobs, python=opts.python)


def run_cases(job: CaseJob) -> RunResult:
    """The per-sample work: run the job's task set against its code on this worker.

    Raises:
        Refused: This worker has no proven sandbox of the backend the job needs.
        MissingTaskSet: The run's task set is not here (Dask retries elsewhere).
    """
    worker = get_worker()
    plugin = worker.plugins.get(SANDBOX_PLUGIN)
    if not isinstance(plugin, SandboxPlugin):
        raise Refused("this worker has no gradebox sandbox")
    plugin.check(job)
    tasks = worker.plugins.get(job.taskset)
    cases = tasks.sets.get(job.task) if isinstance(tasks, TaskSetPlugin) else None
    if cases is None:
        raise MissingTaskSet(f"task set {job.taskset} of {job.task!r} is not on this worker")
    return plugin.run(job, cases)


def run_batch(jobs: tuple[CaseJob, ...]) -> tuple[RunResult, ...]:
    """:func:`run_cases` for several samples, one after the other, as one Dask task.

    One task per sample costs the scheduler about as much as a small sample costs
    the sandbox; a batch shares that cost. A job that raises fails the batch (Dask
    retries it, or the coordinator makes every sample of it an ``infra_error``).
    """
    return tuple(run_cases(job) for job in jobs)


def sandbox_report(dask_worker: Worker) -> SandboxReport | None:
    """This worker's :meth:`SandboxPlugin.report` (run through ``Client.run``, which passes it)."""
    plugin = dask_worker.plugins.get(SANDBOX_PLUGIN)
    return plugin.report() if isinstance(plugin, SandboxPlugin) else None


def worker_security(
    address: str, *, ca: Path | None, cert: Path | None, key: Path | None
) -> Security | None:
    """TLS for a worker: the files given, else Dask's own configuration for ``tls://``.

    With a certificate, encryption is required: the worker talks to nobody in clear.
    """
    if cert is not None and key is not None and ca is not None:
        return Security(
            tls_ca_file=str(ca),
            tls_worker_cert=str(cert),
            tls_worker_key=str(key),
            require_encryption=True,
        )
    if address.startswith("tls://"):
        return Security()
    return None


def run_worker(
    address: str, options: WorkerOptions, *, security: Security | None, name: str | None
) -> bool:
    """Join the scheduler at ``address`` as a gradebox worker until stopped.

    The worker connects first with no gradebox resource (so it is sent no
    grading work), then opens and self-checks its sandbox, then advertises it.

    Returns:
        ``True`` when stopped by SIGINT or SIGTERM, ``False`` when the worker
        ended on its own (the scheduler went away and did not come back).

    Raises:
        IsolationUnavailable: The sandbox failed its self-check (logged on the
            scheduler too); the worker has left.
    """
    return asyncio.run(_serve(address, options, security, name))


async def _serve(
    address: str, options: WorkerOptions, security: Security | None, name: str | None
) -> bool:
    with dask.config.set(QUIET_HTTP):
        worker = Worker(
            address,
            nthreads=options.jobs,
            security=security,
            name=name,
            dashboard=False,
            dashboard_address="127.0.0.1:0",
            death_timeout=60,
        )
    async with worker:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await worker.plugin_add(SandboxPlugin(options), name=SANDBOX_PLUGIN, catch_errors=False)
        done = asyncio.ensure_future(worker.finished())
        halt = asyncio.ensure_future(stop.wait())
        await asyncio.wait({done, halt}, return_when=asyncio.FIRST_COMPLETED)
        stopped = stop.is_set()
        for future in (done, halt):
            future.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await future
    return stopped
