"""The sandbox: a pool of warm, isolated workers that run hidden cases.

Usage::

    with open_sandbox(isolation="auto", workers=2) as sb:
        result = sb.run(code, "is_even", cases)

:func:`open_sandbox` picks the backend, starts the workers and runs a
self-check that proves the isolation holds (no network, no writable host
paths, no capabilities, a private PID namespace, an empty environment) before
any candidate runs; if anything is missing it raises
:class:`~sandbox.errors.IsolationUnavailable` and nothing runs (fail closed).

:meth:`Sandbox.run` is thread-safe: each call checks out one worker. Only the
arguments of the cases go into the sandbox; the observations come back as
plain decoded data and are compared by :mod:`sandbox.compare`, outside.
"""

from __future__ import annotations

import contextlib
import math
import queue
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from sandbox.backends import (
    Backend,
    Interpreter,
    get_backend,
    locate_python,
    stop_worker_process,
    supported_version,
    system_python,
)
from sandbox.cgroups import TreeCap, find_tree_cap
from sandbox.child.wire import WireError, from_wire
from sandbox.errors import IsolationUnavailable, WorkerError
from sandbox.types import (
    HiddenCase,
    Limits,
    Observation,
    RaisedInfo,
    RunResult,
    job_cases,
    make_case,
)
from sandbox.worker import Worker, WorkerDied, WorkerSilent, WorkerTainted

__all__ = ["Sandbox", "open_sandbox"]

#: How many times one candidate is played again when its play could not be timed (a
#: silent sandbox, a timeout decided from a late look): a host stall is transient, a
#: candidate that stops its own sandbox pays this many more limits and still fails.
_UNTIMED_REPLAYS = 1
_ALLOWED_ENV = {"HOME", "PWD", "PATH", "LANG", "PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED"}
_PROBE = """
def probe(port):
    import os, socket
    facts = {"uid": os.getuid(), "env": sorted(os.environ)}
    lines = open("/proc/self/status").read().splitlines()
    status = dict(l.split(":", 1) for l in lines if ":" in l)
    facts["cap_eff"] = status.get("CapEff", "").strip()
    facts["no_new_privs"] = status.get("NoNewPrivs", "").strip()
    facts["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
    dev = open("/proc/net/dev").read().splitlines()[2:]
    facts["ifaces"] = sorted(l.split(":")[0].strip() for l in dev)
    s = socket.socket()
    s.settimeout(1.0)
    try:
        s.connect(("127.0.0.1", port))
        facts["tcp"] = "connected"
    except OSError as e:
        facts["tcp"] = type(e).__name__
    writable = []
    for p in ("/probe", "/usr/probe", "/etc/probe", "/gradebox/probe"):
        try:
            open(p, "w").close()
            writable.append(p)
        except OSError:
            pass
    facts["writable"] = writable
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    facts["userns"] = "allowed" if libc.unshare(0x10000000) == 0 else "blocked"
    facts["seccomp"] = status.get("Seccomp", "").strip()
    # Each with harmless arguments; the filter must answer EPERM before the kernel looks.
    calls = {
        "ptrace": (101, 2, 0, 0, 0),  # PTRACE_PEEKDATA of pid 0
        "process_vm_readv": (310, 0, 0, 0, 0, 0, 0),
        "pidfd_open": (434, os.getpid(), 0),
        "pidfd_getfd": (438, -1, 0, 0),
        "keyctl": (250, 0, -4, 0),  # KEYCTL_GET_KEYRING_ID of the user keyring
        "add_key": (248, b"user", b"gbx-probe", b"x", 1, -4),
        "perf_event_open": (298, 0, 0, -1, -1, 0),
        "bpf": (321, 9999, 0, 0),
        "io_uring_setup": (425, 0, 0),
        "shmget": (29, 0, 4096, 0),
    }
    facts["denied"] = {}
    for name, (nr, *args) in calls.items():
        ctypes.set_errno(0)
        ret = libc.syscall(nr, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
        facts["denied"][name] = ret == -1 and ctypes.get_errno() == 1
    readable = []
    for p in ("/proc/1/fd/0", "/proc/1/fd/1", "/proc/1/mem", "/proc/1/environ",
              f"/proc/{os.getppid()}/fd/0", f"/proc/{os.getppid()}/mem"):
        try:
            open(p, "rb").close()
            readable.append(p)
        except OSError:
            pass
    facts["init_readable"] = readable
    facts["init_cmdline"] = open("/proc/1/cmdline", "rb").read().decode("ascii", "replace")
    try:
        open("/dev/probe", "w").close()
        facts["dev_writable"] = True
    except OSError:
        facts["dev_writable"] = False
    open("scratch-probe", "w").write("ok")
    facts["scratch"] = open("scratch-probe").read()
    return facts
"""


class Sandbox:
    """A pool of isolated workers; see the module docstring.

    Attributes:
        recycles: How many workers this sandbox has thrown away so far (one
            that could not be cleaned, was tainted, died or went silent); the
            next candidate of that slot got a fresh worker. Monotonic,
            thread-safe, read-only; :meth:`close` does not count.
    """

    def __init__(
        self,
        backend: Backend,
        python: str,
        limits: Limits,
        workers: int,
        tree_cap: TreeCap | None = None,
    ) -> None:
        self.backend = backend.name
        self.isolated = backend.isolated
        self.python = python
        self.limits = limits
        self._backend = backend
        self._tree_cap = tree_cap
        self._idle: queue.SimpleQueue[Worker | None] = queue.SimpleQueue()
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self._recycles = 0
        self._replays = 0
        # Workers are forked from this one long-lived thread: see Worker.__init__.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-spawn")
        # Workers still starting (forked, their zygote not ready yet) and the threads
        # starting them: close() kills the first and waits for the second, so no worker
        # process outlives the sandbox that started it (on a busy machine a start takes
        # seconds; a worker left to finish it ran on after close() returned).
        self._starting: dict[subprocess.Popen[bytes], bool] = {}  # -> Launch.wrapped
        self._boots: list[threading.Thread] = []
        for _ in range(max(1, workers)):
            self._idle.put(None)  # a slot; its worker starts on first use

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(
        self, code: str, fn: str, cases: Sequence[HiddenCase], limits: Limits | None = None
    ) -> RunResult:
        """Run every case against one candidate in a fresh isolated process.

        Never raises for anything the candidate does; a failure of the grader or
        the sandbox itself is returned as ``RunResult.infra_error``.
        """
        lim = limits or self.limits
        job = {
            "tree_capped": self._tree_cap is not None,
            "code": code,
            "fn": fn,
            **job_cases(cases, lim.case_timeout_s),
        }
        worker = self._checkout()
        t0 = time.monotonic()  # the candidate's time: not the wait for a free worker
        caps: tuple[str, ...] = ()
        tainted = untimed = 0
        try:
            while True:
                if worker is None:
                    worker = self._start_worker()
                try:
                    reply = worker.serve(job, lim)
                except WorkerTainted:
                    # Nothing of this job ran: the worker is not to be trusted, this
                    # candidate gets a fresh one (once; twice in a row is ours to fix).
                    self._discard(worker)
                    worker = None
                    tainted += 1
                    if tainted > 1:
                        raise
                    continue
                except WorkerSilent:
                    # No reply in the candidate's limit plus grace: the candidate stopped
                    # its sandbox, or the host stalled it (a busy or paused machine).
                    # Nothing here tells which, so the candidate is played once more
                    # on a fresh worker; silent again, it is a timeout.
                    if untimed >= _UNTIMED_REPLAYS:
                        raise
                    untimed += 1
                    self._count_replay()
                    self._discard(worker)
                    worker = None
                    continue
                caps = worker.caps_hit()
                if worker.recycle:
                    # It could not be cleaned (a deep tree, System V IPC, stray bytes)
                    # or has exited: the next candidate gets a fresh worker.
                    self._discard(worker)
                    worker = None
                if reply["untimed"] is True and untimed < _UNTIMED_REPLAYS:
                    # A timeout decided from a late look (the supervisor was stopped
                    # or starved past a deadline): played once more, like a silence.
                    untimed += 1
                    self._count_replay()
                    continue
                break
        except WorkerError as exc:
            failed = self._worker_failed(worker, exc, cases, time.monotonic() - t0)
            worker = None
            return failed
        finally:
            self._idle.put(worker)
        return _with_caps(_decode_reply(reply, len(cases), time.monotonic() - t0), caps)

    def self_check(self) -> None:
        """Prove the isolation holds; raise :class:`IsolationUnavailable` if not."""
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        port = listener.getsockname()[1]
        try:
            res = self.run(_PROBE, "probe", [make_case("probe", port)])
            accepted = _accepted(listener)
        finally:
            listener.close()
        if res.infra_error:
            raise IsolationUnavailable(f"sandbox self-check could not run: {res.infra_error}")
        obs = res.observations[0]
        if obs.status != "returned" or not isinstance(obs.value, dict):
            raise IsolationUnavailable(
                f"sandbox self-check failed to run its probe ({obs.status}: {obs.detail or ''}"
                f"{obs.raised.type_name if obs.raised else ''}); stderr: {res.stderr[-500:]}"
            )
        if self.isolated:
            problems = _isolation_problems(obs.value, accepted)
            if problems:
                raise IsolationUnavailable(
                    f"isolation {self.backend!r} does not hold here: " + "; ".join(problems)
                )

    @property
    def recycles(self) -> int:
        """How many workers were thrown away and replaced so far (see the class docstring)."""
        with self._lock:
            return self._recycles

    @property
    def replays(self) -> int:
        """How many plays were repeated because the grader could not time them.

        A play is repeated (once per candidate) when its sandbox went silent past the
        candidate's limit plus grace, or when a timeout was decided from a late look
        (see :meth:`run`); the last play decides. Monotonic, thread-safe.
        """
        with self._lock:
            return self._replays

    @property
    def running(self) -> int:
        """How many workers are up now (started and not yet thrown away)."""
        with self._lock:
            return len(self._all)

    @property
    def python_version(self) -> str | None:
        """``sys.version`` inside the sandbox, as a running worker reported it (else ``None``)."""
        with self._lock:
            return self._all[0].python_version if self._all else None

    def warm(self) -> int:
        """Start every worker slot now, in parallel; return how many are running."""
        slots, done = self._boot()
        return sum(done.get() for _ in range(slots))

    def start(self, count: int) -> None:
        """Start up to ``count`` more workers in the background, in slots not yet started.

        A slot left unstarted starts its worker when a candidate first takes it; this
        starts them before, while the caller does other work.
        """
        if count > 0:
            self._boot(count)

    def _boot(self, limit: int | None = None) -> tuple[int, queue.SimpleQueue[bool]]:
        """Start the worker of every idle slot (at most ``limit``), each in a thread of its own.

        Each worker goes back to the pool as soon as it is up (an empty slot when it
        could not start), so a candidate can take the first one while the others still
        start. Returns how many slots were taken and a queue that gets, per slot, whether
        its worker started.
        """
        slots: list[Worker | None] = []
        taken: list[Worker] = []
        while limit is None or len(slots) < limit:
            try:
                w = self._idle.get_nowait()
            except queue.Empty:
                break
            if w is None:
                slots.append(w)
            else:
                taken.append(w)  # already running: back to the pool below
        done: queue.SimpleQueue[bool] = queue.SimpleQueue()
        for w in taken:
            self._idle.put(w)
            done.put(True)

        def start(w: Worker | None) -> None:
            try:
                if w is None:
                    w = self._start_worker()
            except WorkerError:
                w = None
            finally:
                self._idle.put(w)
                done.put(w is not None)

        for w in slots:
            t = threading.Thread(target=start, args=(w,), name="sandbox-boot")
            with self._lock:
                self._boots = [b for b in self._boots if b.is_alive()]
                self._boots.append(t)
            t.start()
        return len(slots) + len(taken), done

    def close(self) -> None:
        """Stop every worker."""
        with self._lock:
            self._closed = True
            workers, self._all = self._all, []
            starting, boots = list(self._starting.items()), list(self._boots)
        for proc, wrapped in starting:  # its start fails and cleans up
            stop_worker_process(proc, wrapped)
        for w in workers:  # all at once: their teardowns overlap
            w.kill()
        for w in workers:
            w.close()
        for t in boots:
            if t is not threading.current_thread():
                t.join(timeout=30)  # a hang bound: a killed start ends within ms
        self._spawner.shutdown(wait=False)

    def _checkout(self) -> Worker | None:
        worker = self._idle.get()
        if worker is None:  # an unstarted slot: a running worker that waits goes first
            with contextlib.suppress(queue.Empty):
                other = self._idle.get_nowait()
                self._idle.put(worker)  # the unstarted slot stays for later
                worker = other
        if worker is not None and not worker.alive:
            self._discard(worker)
            worker = None
        return worker

    def _start_worker(self) -> Worker:
        cgroup = None
        if self._tree_cap is not None:
            lim = self.limits
            try:
                cgroup = self._tree_cap.create((lim.memory_mb + 32) << 20, lim.max_procs + 4)
            except OSError as exc:
                raise WorkerError(f"could not create the worker's cgroup: {exc}") from exc
        started: list[subprocess.Popen[bytes]] = []

        def spawned(proc: subprocess.Popen[bytes]) -> None:
            started.append(proc)
            with self._lock:
                self._starting[proc] = launch.wrapped
                closed = self._closed
            if closed:  # close() ran while it was being forked
                stop_worker_process(proc, launch.wrapped)

        launch = self._backend.launch(self.python, self.limits)
        try:
            worker = Worker(launch, self._spawner, cgroup, on_spawn=spawned)
        except WorkerError:
            if cgroup is not None:
                cgroup.remove()
            raise
        finally:
            with self._lock:
                for proc in started:
                    self._starting.pop(proc, None)
        with self._lock:
            if self._closed:
                worker.close()
                raise WorkerError("sandbox is closed")
            self._all.append(worker)
        return worker

    def _worker_failed(
        self, worker: Worker | None, exc: WorkerError, cases: Sequence[HiddenCase], wall: float
    ) -> RunResult:
        """Throw ``worker`` away and say what became of the candidate it failed on."""
        caps = worker.caps_hit() if worker is not None else ()
        self._discard(worker)
        if isinstance(exc, WorkerSilent):
            return _with_caps(_all(cases, "timeout", "sandbox stopped answering", wall), caps)
        if isinstance(exc, WorkerDied):
            return _with_caps(_all(cases, "crash", "sandbox process ended", wall), caps)
        return RunResult(
            observations=tuple(Observation("not_run") for _ in cases),
            wall_s=wall,
            infra_error=_infra_message(exc),
        )

    def _count_replay(self) -> None:
        with self._lock:
            self._replays += 1

    def _discard(self, worker: Worker | None) -> None:
        if worker is None:
            return
        with contextlib.suppress(Exception):  # best effort: the slot must survive
            worker.close()
        with self._lock:
            self._recycles += 1
            if worker in self._all:
                self._all.remove(worker)


def open_sandbox(
    isolation: str = "auto",
    limits: Limits | None = None,
    workers: int = 1,
    python: str | None = None,
    *,
    self_check: bool = True,
    boot: int | None = None,
) -> Sandbox:
    """Start a sandbox, check that its isolation holds, and return it.

    Args:
        isolation: ``auto`` (the strong default, ``bwrap``), ``bwrap`` or ``none``.
        limits: Default resource limits per candidate.
        workers: Number of warm workers (candidates graded at once).
        python: Interpreter that runs candidates (default: the system ``python3``).
        self_check: Run the isolation self-check before returning.
        boot: How many workers to start now (default: all); the other slots start
            theirs on first use or on :meth:`Sandbox.start`. A run of one candidate
            needs one.

    Raises:
        IsolationUnavailable: The isolation cannot be provided or does not hold.
    """
    backend = get_backend(isolation)
    lim = limits or Limits()
    # The system's interpreter is taken without starting it (a process of its own,
    # ~20 ms of a run's start): its first worker says its version. Only when that
    # will not do, or no worker starts on it, is the interpreter probed as before.
    assumed = system_python(python)
    backend.check_tools()
    tree_cap = find_tree_cap() if backend.isolated and lim.tree_limits else None
    if assumed is not None:
        try:
            return _start(backend, assumed, lim, workers, tree_cap, boot, self_check, probed=False)
        except _NotThisPython:
            pass
    interp = locate_python(python)
    return _start(backend, interp, lim, workers, tree_cap, boot, self_check, probed=True)


class _NotThisPython(Exception):
    """An interpreter taken without a probe does not do: probe and start again."""


def _start(
    backend: Backend,
    interp: Interpreter,
    lim: Limits,
    workers: int,
    tree_cap: TreeCap | None,
    boot: int | None,
    self_check: bool,
    *,
    probed: bool,
) -> Sandbox:
    """Start a sandbox on ``interp``; see :func:`open_sandbox`.

    Raises:
        _NotThisPython: ``interp`` was not ``probed`` and no worker started on it,
            or it said it is older than 3.11 (before any self-check or candidate).
    """
    backend.use(interp)
    sb = Sandbox(backend, interp.path, lim, workers, tree_cap)
    try:
        slots, done = sb._boot(None if boot is None else max(1, boot))
        # The first worker up takes the self-check while the others still start: they are
        # all launched alike, and no candidate runs on any of them before it has passed.
        started = any(done.get() for _ in range(slots))
        if not probed and not (started and supported_version(sb.python_version)):
            raise _NotThisPython
        if not started:
            backend.check_available(interp.path)  # says why workers cannot start
            raise IsolationUnavailable(f"isolation {backend.name!r}: no sandbox worker could start")
        if self_check:
            sb.self_check()
    except BaseException:
        sb.close()
        raise
    return sb


def _accepted(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def _isolation_problems(facts: dict[str, Any], accepted: bool) -> list[str]:
    return _namespace_problems(facts, accepted) + _plumbing_problems(facts)


def _namespace_problems(facts: dict[str, Any], accepted: bool) -> list[str]:
    problems = []
    if facts.get("uid") == 0:
        problems.append("candidates run as uid 0")
    if facts.get("cap_eff") not in ("0000000000000000", ""):
        problems.append(f"candidates hold capabilities ({facts.get('cap_eff')})")
    if facts.get("no_new_privs") != "1":
        problems.append("no_new_privs is not set")
    if accepted or facts.get("tcp") == "connected":
        problems.append("the host's loopback network is reachable")
    if set(facts.get("ifaces", [])) - {"lo"}:
        problems.append(f"network interfaces visible: {facts.get('ifaces')}")
    if facts.get("writable"):
        problems.append(f"host paths are writable: {facts.get('writable')}")
    if facts.get("userns") != "blocked":
        problems.append("candidates can create nested user namespaces")
    if facts.get("scratch") != "ok":
        problems.append("the scratch dir is not writable")
    if len(facts.get("pids", [])) > 3:
        problems.append("the PID namespace is not private")
    extra = set(facts.get("env", [])) - _ALLOWED_ENV
    if extra:
        problems.append(f"environment not scrubbed: {sorted(extra)}")
    return problems


def _plumbing_problems(facts: dict[str, Any]) -> list[str]:
    """The filter, the harness's own processes and /dev (see sandbox/child/harness.py)."""
    problems = []
    if facts.get("seccomp") != "2":
        problems.append("no seccomp filter is installed")
    allowed = sorted(k for k, v in facts.get("denied", {}).items() if v is not True)
    if allowed or not facts.get("denied"):
        problems.append(f"system calls the seccomp filter must refuse are allowed: {allowed}")
    if facts.get("init_readable"):
        problems.append(f"the harness's own processes are reachable: {facts['init_readable']}")
    if "/gradebox/harness.py" not in str(facts.get("init_cmdline", "")):
        problems.append("PID 1 of the sandbox is not the harness (a foreign init holds its pipes)")
    if facts.get("dev_writable") is not False:
        problems.append("/dev is writable")
    return problems


def _all(cases: Sequence[Any], status: Any, detail: str, wall: float) -> RunResult:
    return RunResult(
        observations=tuple(Observation(status, detail=detail) for _ in cases), wall_s=wall
    )


#: What the sandbox saw of a case the whole tree's caps may have stopped.
_UNFINISHED = ("timeout", "crash")


def _with_caps(res: RunResult, caps: tuple[str, ...]) -> RunResult:
    """Add the caps the run hit; a case that did not finish in such a run is ``resource``.

    The cgroup counts per candidate, not per case: ``resource`` says the case ran
    out of time or its process died while the tree was at a cap (a fork bomb
    retrying at the process cap until its clock runs out, a tree killed at the
    memory cap), and ``detail`` names the caps. A case that returned or raised
    ended on its own terms and keeps its observation.
    """
    if not caps:
        return res
    detail = ", ".join(caps)
    observations = tuple(
        Observation("resource", detail=detail, duration_s=o.duration_s)
        if o.status in _UNFINISHED
        else o
        for o in res.observations
    )
    return replace(res, observations=observations, caps_hit=caps)


def _infra_message(exc: WorkerError) -> str:
    """A bounded, printable infra message (ours; never text a candidate wrote)."""
    text = str(exc)[:300]
    return "".join(c if c.isprintable() else "?" for c in text)


def _decode_reply(reply: dict[str, Any], n: int, wall: float) -> RunResult:
    raw = reply.get("obs")
    if not isinstance(raw, list) or len(raw) != n:
        # The supervisor always sends one per case: this one was not from it.
        return _all(range(n), "crash", "malformed sandbox reply", wall)
    return RunResult(
        observations=tuple(_decode_obs(o) for o in raw),
        stdout=_text(reply.get("stdout", ""), 1 << 20),
        stderr=_text(reply.get("stderr", ""), 1 << 20),
        wall_s=wall,
    )


def _text(value: Any, limit: int) -> str:
    """A candidate-influenced string, made valid Unicode and capped."""
    return str(value)[:limit].encode("utf-8", "backslashreplace").decode("utf-8")


def _decode_obs(o: Any) -> Observation:
    """Turn one observation frame into an :class:`Observation`; malformed is a crash."""
    if not isinstance(o, dict):
        return Observation("crash", detail="malformed observation")
    status = o.get("status")
    duration = o.get("duration_s", 0.0)
    ok = type(duration) in (int, float) and math.isfinite(duration) and duration >= 0
    duration = min(float(duration), 1e6) if ok else 0.0
    detail = _text(o.get("detail", ""), 300)
    if status == "returned":
        try:
            return Observation("returned", value=from_wire(o.get("value")), duration_s=duration)
        except (WireError, RecursionError):
            return Observation("crash", detail="malformed result value")
    if status == "raised":
        exc = o.get("exc")
        if not isinstance(exc, dict) or not isinstance(exc.get("mro"), list):
            return Observation("crash", detail="malformed exception report")
        info = RaisedInfo(
            type_name=_text(exc.get("type", "?"), 200),
            mro=tuple(_text(m, 200) for m in exc["mro"][:64]),
            message=_text(exc.get("message", ""), 500),
        )
        return Observation("raised", raised=info, duration_s=duration)
    if status in ("unserializable", "timeout", "crash", "not_run"):
        return Observation(status, detail=detail, duration_s=duration)
    return Observation("crash", detail="unknown observation status")
