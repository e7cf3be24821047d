"""The zygote: a small warm process inside the isolation that serves candidates.

Runs as ``python -I -S -B harness.py [--pidns]`` inside the backend's isolation,
using the standard library only. Three kinds of process; no candidate ever runs
in a process forked from one that held data of another job:

* **init** (this script's first process; PID 1 of the sandbox's PID namespace
  with bubblewrap's ``--as-pid-1``, so no bubblewrap init sits in the sandbox
  holding the grader's pipes). It is non-dumpable, so same-uid code can neither
  ptrace it, open its ``/proc/1/fd``, ``mem`` or ``environ``, nor duplicate its
  descriptors; as a namespace's init it receives no signal it has no handler
  for; it never reads a job or a result. It forks the supervisor once, then one
  *child* per run of cases when the supervisor asks (the job and the results
  region arrive as sealed memfds, passed on unread), reaps everything, and after
  each job kills whatever is left but the supervisor and says whether the worker
  is clean.
* **supervisor** (one per worker, forked from init before any job; non-dumpable
  too): reads each job from stdin, has init fork a child per run of cases,
  keeps every clock itself, copies and validates each result frame as it is
  published (:mod:`region`), kills the candidate's whole tree, wipes the scratch
  dir, ``/tmp`` and ``/dev/shm``, and writes the reply. It holds earlier jobs,
  but nothing is ever forked from it, so no candidate inherits its memory (a
  process forked per job instead would cost a second fork and the pages it
  copies on write: about half of the sandbox's CPU per candidate).
* **child**: forked from init's clean heap; maps its job and region, drops into
  the candidate's limits, closes every descriptor but its output pipes, runs the
  cases and appends one frame per case to the region.

Protocol (length-prefixed JSON frames on stdin/stdout):

* init -> grader, once: ``{"ready": true, "python": "3.11.2"}``
* grader -> supervisor, per candidate: ``{"code", "fn", "cases": [{"args",
  "kwargs", "timeout_s"}], "limits": {...}}`` (arguments only: expected values
  never come here)
* supervisor -> grader: ``{"obs": [...], "stdout", "stderr", "untimed", "recycle"}``
  or ``{"infra_error": "bad_job"}`` (``untimed``: a timeout was decided from a
  late look, so the grader plays the candidate again)
* init -> grader, after the supervisor replied and the namespace was swept:
  ``{"done": true, "clean": bool}``; init exits when not clean.

The system calls a candidate could use against these processes (``ptrace``,
``process_vm_readv``, ``pidfd_getfd``, ``keyctl``...) are also refused by the
seccomp filter the backend installs for the whole sandbox (none of these
processes needs them).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # signal.py's C module (no stubs)
import contextlib
import ctypes
import fcntl
import gc
import json
import marshal
import os
import resource
import selectors
import signal
import socket
import struct
import sys
import time

# Loaded here once for every child: most candidates import typing (``List``...).
from typing import TYPE_CHECKING, Any

# -I leaves the script's own folder off sys.path; wire.py and region.py live beside us.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if TYPE_CHECKING:
    from sandbox.child import genuine, programs, wire
    from sandbox.child.region import (
        FRAME_SLACK,
        BadFrame,
        Region,
        check_frame,
        check_load_error,
    )
else:
    import genuine
    import programs
    import wire
    from region import FRAME_SLACK, BadFrame, Region, check_frame, check_load_error

_HDR = struct.Struct(">I")
_MAX_JOB = 64 * 1024 * 1024
_STOP_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)
_CLEAN_DIRS = ("/tmp", "/dev/shm")
_REGION_BYTES = 64 * 1024 * 1024
_POLL_S = 0.05
_CHILD_DEFAULT_SIGNALS = (int(signal.SIGINT), int(signal.SIGTERM), int(signal.SIGCHLD))
#: The supervisor's resident set it must get back under after a job (it starts at
#: ~16 MiB): more would be memory the next candidates lose under the tree's cap.
_SUPERVISOR_RSS = 24 * 1024 * 1024
#: A pause between two looks at the region longer than this (we were stopped or
#: starved) makes results published meanwhile past their deadline untrusted.
_GAP_S = 0.25
#: Exit codes of the supervisor, read by init.
EXIT_CLEAN, EXIT_DIRTY, EXIT_EOF, EXIT_BAD_JOB = 0, 10, 11, 12


def write_frame(fd: int, obj: Any) -> None:
    """Write one length-prefixed JSON frame, looping over partial writes."""
    data = json.dumps(obj, ensure_ascii=True, allow_nan=False).encode("ascii")
    buf = memoryview(_HDR.pack(len(data)) + data)
    while buf:
        n = os.write(fd, buf)
        buf = buf[n:]


def read_exact(fd: int, n: int) -> bytes | None:
    """Read exactly n bytes from a blocking fd; None at EOF."""
    chunks = []
    while n:
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


# ---------------------------------------------------------------- the child


def _set_limits(lim: dict[str, Any], tree_capped: bool) -> None:
    mb = 1024 * 1024
    cpu = int(lim["candidate_timeout_s"]) + 1
    # With a cgroup capping the tree, let the cgroup's process cap bite first: the
    # grader reads its counter and says so on the row (an rlimit leaves no trace).
    nproc = lim["max_procs"] + 8 if tree_capped else lim["max_procs"]
    for res, val in (
        (resource.RLIMIT_AS, lim["memory_mb"] * mb),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, lim["max_file_mb"] * mb),
        (resource.RLIMIT_NOFILE, lim["max_open_files"]),
        (resource.RLIMIT_CORE, 0),
        # POSIX message queues live in the worker's IPC namespace, which outlives the
        # candidate and which we cannot list: allow none.
        (resource.RLIMIT_MSGQUEUE, 0),
    ):
        resource.setrlimit(res, (val, val))


def _encode_result(value: Any, cap: int) -> dict[str, Any]:
    try:
        body = {"status": "returned", "value": wire.to_wire(value)}
        if len(json.dumps(body, ensure_ascii=True)) > cap:
            return {"status": "unserializable", "detail": "result larger than the limit"}
        return body
    except wire.WireError as exc:
        return {"status": "unserializable", "detail": str(exc)[:200]}
    except RecursionError:
        return {"status": "unserializable", "detail": "nested too deeply"}


def child_main(job: dict[str, Any], start: int, region: Region) -> None:
    """Run cases ``start..`` of one candidate in this (already forked) process.

    Function and program cases load the candidate's module once and call into
    it; stdio cases run the compiled module afresh per case as ``__main__``.
    """
    cap = job["limits"]["result_bytes"]
    cases = job["cases"]
    kinds = {c.get("kind", "function") for c in cases[start:]}
    namespace: dict[str, Any] = {"__name__": "candidate", "__builtins__": __builtins__}
    tests = None
    if "program" in kinds:  # before the candidate runs: the watch takes its baseline
        tests = programs.Programs(job.get("programs", []), namespace, job["fn"])
    fn: Any = None
    try:
        code = compile(job["code"], "<candidate>", "exec", dont_inherit=True)
        if kinds != {"stdio"}:
            exec(code, namespace)
            fn = namespace.get(job["fn"])
            if "function" in kinds and not callable(fn):
                region.append({"load_error": f"no function named {job['fn']!r} is defined"})
                return
    except BaseException as exc:
        region.append({"load_error": "module raised " + genuine.describe(exc)["type"]})
        return
    for i in range(start, len(cases)):
        case = cases[i]
        kind = case.get("kind", "function")
        t0 = time.monotonic()
        body: dict[str, Any]
        if kind == "stdio":
            body = programs.run_stdio(code, case["stdin"], cap, genuine.describe)
        elif kind == "program" and tests is not None:
            body = _run_test(tests, case)
        else:
            body = _call(fn, case, cap)
        body["i"] = i
        body["duration_s"] = time.monotonic() - t0
        _flush()  # what it printed survives a kill during a later case
        region.append(body)


def _call(fn: Any, case: dict[str, Any], cap: int) -> dict[str, Any]:
    """One function case: call with the decoded arguments, encode what came back."""
    args = wire.from_wire(case["args"], allow_opaque=False)
    kwargs = wire.from_wire(case["kwargs"], allow_opaque=False)
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:
        return {"status": "raised", "exc": genuine.describe(exc)}
    return _encode_result(value, cap)


def _run_test(tests: programs.Programs, case: dict[str, Any]) -> dict[str, Any]:
    """One program case: ``True`` when the test passed, a tampering reason, or what it raised."""
    try:
        reason = tests.run(case["program"], case["test"])
    except BaseException as exc:
        return {"status": "raised", "exc": genuine.describe(exc)}
    return {"status": "returned", "value": programs.TAMPERED + reason if reason else True}


def _flush() -> None:
    # try/except, not contextlib.suppress: in the child, every object of ours it
    # touches is a page it copies (about 1.5 per suppress), and this runs per case.
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - see above
            stream.flush()
        except BaseException:  # the candidate's streams: anything goes
            pass


def _child_entry(
    job: dict[str, Any], start: int, region: Region, pipes: dict[str, tuple[int, int]]
) -> None:
    """Set up the forked child (descriptors, limits, signals) and run; never returns."""
    status = 0
    try:
        signal.set_wakeup_fd(-1)  # init's; closed below
        # A process group of its own (the none backend kills the candidate by its group;
        # in a PID namespace kill(-1) reaches every process whatever its group). Not a
        # session: nothing here has a terminal to leave, and with scheduler autogroups
        # a new session costs a task group, 0.5-3 ms of kernel time per candidate.
        os.setpgid(0, 0)
        # If memory runs out, we are the one to go, not the harness. Plain try and the
        # C signal calls (not contextlib and signal's enum wrappers): each object a
        # child touches is a page it copies from init, ~90 pages for these lines.
        try:
            fd = os.open("/proc/self/oom_score_adj", os.O_WRONLY)
        except OSError:
            fd = -1
        if fd >= 0:
            try:  # noqa: SIM105 - see above
                os.write(fd, b"1000")
            except OSError:
                pass
            os.close(fd)
        # SIGPIPE/SIGXFSZ stay ignored, as in any Python program: a write past the
        # file-size limit raises OSError in the candidate instead of killing it.
        for sig in _CHILD_DEFAULT_SIGNALS:
            _signal.signal(sig, _signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(pipes["out"][1], 1)
        os.dup2(pipes["err"][1], 2)
        os.closerange(3, 1 << 16)
        _set_limits(job["limits"], job.get("tree_capped") is True)
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
        genuine.watch_imports()  # expected exceptions match only classes we loaded
        child_main(job, start, region)
        _flush()
    except BaseException:
        status = 70
    os._exit(status)


def _child_boot(jobfd: int, regionfd: int, pipes: dict[str, tuple[int, int]]) -> None:
    """In a child just forked from init: map its job and region, then run; never returns."""
    try:
        size = os.fstat(jobfd).st_size
        data = bytearray()
        while len(data) < size and (chunk := os.pread(jobfd, size - len(data), len(data))):
            data += chunk
        spec = marshal.loads(data)
        region = Region(spec["region"], regionfd)
    except BaseException:
        os._exit(70)
    _child_entry(spec["job"], spec["start"], region, pipes)


# ---------------------------------------------------------------- the supervisor


class Capture:
    """Keeps the first ``cap`` bytes of a stream and drains the rest."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.data = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        """Keep what fits under the cap; count the rest."""
        room = self.cap - len(self.data)
        self.data += chunk[:room]
        self.dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        """The kept bytes, decoded leniently, with a note of what was dropped."""
        s = self.data.decode("utf-8", "replace")
        return s + (f"\n[... {self.dropped} bytes dropped]" if self.dropped else "")


class CandidateBroke(Exception):
    """The candidate's processes could not be ended or cleaned up after: recycle."""


class Job:
    """Serves candidates inside the supervisor, one at a time; see the module docstring."""

    def __init__(self, pidns: bool, scratch: str, ctl: socket.socket) -> None:
        self.pidns = pidns
        self.scratch = scratch
        self.ctl = ctl  # the control channel to init, which forks and reaps the children
        # Children are named by a sequence number, never by pid: a pid is reused (32,768
        # of them here, and a candidate can fork through them), so a late reap notice
        # about an earlier job's process must never end a later child's run.
        self.seq = 0  # the latest child asked of init
        self.ended = False  # init reaped child ``seq``

    # -- process tree control
    def kill_all(self, child: int) -> None:
        """Kill every process the candidate started and wait until they are gone.

        In a private PID namespace ``kill(-1)`` reaches every process but us and
        init, whatever session or group it moved to, and we are their subreaper.
        Without one (``none`` backend) only the child's process group is
        reachable: a known gap.

        Raises:
            CandidateBroke: Processes survived SIGKILL for seconds.
        """
        deadline = time.monotonic() + 5.0
        if not self.pidns:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child, signal.SIGKILL)
            while not self.ended and time.monotonic() < deadline:  # init reaps it, says so
                self.messages(0.05)
            return
        # Init reaps them (a zombie stays listed in /proc until it does). ``kill(-1)``
        # walks every task on the host, not only ours (159 us with 5,000 there), so
        # when the only process left is the child (alive or a zombie), it is killed by
        # its pid: it cannot fork once killed, and one it forked before is listed on
        # the next look, when kill(-1) takes everything at once.
        me, alone = str(os.getpid()), [str(child)]
        looks = 0
        while others := [p for p in os.listdir("/proc") if p.isdigit() and p not in ("1", me)]:
            if time.monotonic() > deadline:
                raise CandidateBroke(f"{len(others)} candidate processes survived SIGKILL")
            with contextlib.suppress(ProcessLookupError):
                os.kill(child if looks == 0 and others == alone else -1, signal.SIGKILL)
            looks += 1
            time.sleep(0.0005)

    def messages(self, timeout: float | None) -> list[tuple[bytes, list[int]]]:
        """Init's messages waiting now (or within ``timeout``); notes the child's end."""
        out = []
        self.ctl.settimeout(timeout)
        try:
            while True:
                msg, fds, _, _ = socket.recv_fds(self.ctl, 64, 4)
                if not msg:
                    raise CandidateBroke("init closed the control channel")
                if msg[:1] == b"E" and int(msg[1:]) == self.seq:
                    self.ended = True
                out.append((msg, fds))
                self.ctl.settimeout(0.0)
        except (BlockingIOError, TimeoutError):
            pass
        finally:
            self.ctl.settimeout(None)
        return out

    def spawn(self, run: _Run, region: Region) -> tuple[int, int, int]:
        """Have init fork a child for cases ``run.next..``; return its pid and output pipes.

        The child is forked from init's clean heap, never from ours (which holds
        earlier jobs): its job and the results region travel as sealed memfds that
        init passes on without reading.
        """
        # marshal, not JSON: the child reads it before any candidate code, and the
        # fewer of init's pages a child's own work touches, the fewer it copies
        # (json's decoder path is ~100 pages; marshal's ~40). The job is plain data
        # we decoded and checked; the memfd is sealed, so only we ever wrote it.
        data = marshal.dumps({"job": run.job, "start": run.next, "region": region.size})
        jobfd = _sealed_memfd("job", data)
        self.seq += 1
        self.ended = False
        # T: init loads unittest (once) before this fork, so test programs find it
        # loaded in every child instead of each child importing it for itself.
        kinds = {c.get("kind") for c in run.job["cases"]}
        ask = b"T%d" if "program" in kinds else b"F%d"
        try:
            socket.send_fds(self.ctl, [ask % self.seq], [jobfd, region.fd])
        finally:
            os.close(jobfd)
        forked = b"P%d:" % self.seq
        while True:
            for msg, fds in self.messages(None):
                if msg.startswith(forked) and len(fds) == 2:
                    return int(msg[len(forked) :]), fds[0], fds[1]
                for fd in fds:
                    os.close(fd)

    def wipe(self) -> bool:
        """Leave nothing for the next candidate; False when the worker must be replaced.

        Empties the scratch dir, ``/tmp`` and ``/dev/shm`` (iteratively: a deep tree
        cannot exhaust our stack) and checks System V IPC, which only a fresh IPC
        namespace removes. ``/dev`` itself is read-only; keyrings are unreachable
        (the seccomp filter refuses every key system call).
        """
        dirs = [self.scratch] + (list(_CLEAN_DIRS) if self.pidns else [])
        try:
            for d in dirs:
                _empty_dir(d)
        except OSError:
            return False
        if not self.pidns:
            return True
        for kind in ("shm", "msg", "sem"):
            fd = os.open(f"/proc/sysvipc/{kind}", os.O_RDONLY)
            try:
                if os.read(fd, 1 << 16).count(b"\n") > 1:
                    return False
            finally:
                os.close(fd)
        return True

    # -- one candidate
    def serve(self, job: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """Run every case of one candidate; return the reply and whether to recycle."""
        lim = job["limits"]
        n = len(job["cases"])
        run = _Run(job, time.monotonic() + lim["candidate_timeout_s"])
        broke = False
        while run.next < n and not run.stopped:
            try:
                self._run_child(run)
            except CandidateBroke as exc:
                run.fail_rest("crash", str(exc)[:200])
                broke = True
        final = [o if o is not None else {"status": "not_run"} for o in run.obs]
        reply = {
            "obs": final,
            "stdout": run.out.text(),
            "stderr": run.err.text(),
            "untimed": run.untimed,
        }
        return reply, broke

    def _run_child(self, run: _Run) -> None:
        """Fork one child for cases ``run.next..`` and record what became of them."""
        region = Region(_REGION_BYTES, _sealed_memfd("region", b"", _REGION_BYTES))
        try:
            pid, out_fd, err_fd = self.spawn(run, region)
        finally:
            region.release_fd()
        for fd in (out_fd, err_fd):
            os.set_blocking(fd, False)
        try:
            ended = run.watch(pid, region, self, out_fd, err_fd)
        finally:
            self.kill_all(pid)
            # The tree is dead, so every write end is closed: drain to EOF.
            for fd, sink in ((out_fd, run.out), (err_fd, run.err)):
                while chunk := _read_some(fd):
                    sink.feed(chunk)
                os.close(fd)
        run.settle(region, ended)
        region.close()


class _Run:
    """The state of one candidate across the children it takes."""

    def __init__(self, job: dict[str, Any], budget_end: float) -> None:
        lim = job["limits"]
        self.job = job
        self.n = len(job["cases"])
        self.obs: list[dict[str, Any] | None] = [None] * self.n
        self.out, self.err = Capture(lim["output_bytes"]), Capture(lim["output_bytes"])
        self.max_frame = int(lim["result_bytes"]) + FRAME_SLACK
        self.budget_end = budget_end
        self.max_timeouts = int(lim.get("max_timeouts", 0))
        self.timeouts = 0
        self.next = 0
        self.stopped = False
        self.since = 0.0  # our clock: when the running case started, at the latest
        self.floor = 0.0  # ... and at the earliest
        self.last_look = 0.0  # when we last looked at the region
        self.late = False  # a look came too late to vouch for the running case
        self.fresh = True  # no frame yet from the current child
        # A timeout was decided from a late look: we were stopped or starved past a
        # deadline, so we cannot tell a slow candidate from a stalled host. The grader
        # plays such a candidate again (once); see Sandbox.run.
        self.untimed = False

    def deadline(self) -> float:
        """When the running case (or the whole candidate) is out of time, on our clock."""
        if self.next >= self.n:
            return self.budget_end
        limit = float(self.job["cases"][self.next]["timeout_s"])
        return min(self.budget_end, self.since + limit)

    def take(self, region: Region) -> bool:
        """Copy out and validate newly published frames; False when the child broke protocol.

        Each frame is copied once, when we first see it, and the next case's clock
        starts then: rewriting the region later changes neither a result nor a clock.
        """
        look = time.monotonic()
        if look - self.last_look > _GAP_S and self.next < self.n and self.deadline() < look:
            # We did not look for a while (the candidate can stop us: same uid), and the
            # running case's deadline passed meanwhile: whatever it published now may
            # have come late, and nothing tells us it did not.
            self.late = True
            return False
        try:
            frames = region.take(self.max_frame)
        except BadFrame as exc:
            self.fail_one("crash", str(exc))
            return False
        for raw in frames:
            if self.fresh and (msg := check_load_error(raw)) is not None:
                self.fail_rest("crash", msg)
                self.stopped = True
                return False
            self.fresh = False
            if self.next >= self.n:
                self.fail_last("crash", "unexpected extra result frame")
                return False
            try:
                self.obs[self.next] = check_frame(raw, self.next, look - self.floor)
            except BadFrame as exc:
                self.fail_one("crash", str(exc))
                return False
            self.next += 1
            # The next case started when this frame was published: after our previous
            # look (``floor``, a true bound on its duration) and before this one
            # (``since``, where its clock starts: at most one poll in its favour).
            self.since, self.floor = look, self.last_look
        self.last_look = look
        return True

    def watch(self, pid: int, region: Region, job: Job, out_fd: int, err_fd: int) -> str:
        """Sleep until the child exits, breaks protocol or runs out of time, draining output.

        Returns ``exited``, ``broke`` or ``timeout``.
        """
        sel = selectors.DefaultSelector()
        sinks = {out_fd: self.out, err_fd: self.err}
        wake = job.ctl.fileno()
        for fd in (wake, *sinks):
            sel.register(fd, selectors.EVENT_READ)
        self.since = self.floor = self.last_look = time.monotonic()
        self.fresh, self.late = True, False
        try:
            while True:
                if not self.take(region):
                    return "timeout" if self.late else "broke"
                if self.next >= self.n:
                    return "exited"  # every case answered: nothing left to wait for
                if job.ended:
                    return "exited"  # init reaped it (perhaps said so while it started)
                now = time.monotonic()
                if self.deadline() <= now:
                    return "timeout"
                # Cases start without telling us (no wake-up per case): look again soon.
                for key, _ in sel.select(min(self.deadline() - now, _POLL_S)):
                    if key.fd == wake:
                        job.messages(0.0)
                        if job.ended:
                            return "exited"
                        continue
                    chunk = _read_some(key.fd)
                    if chunk:
                        sinks[key.fd].feed(chunk)
                    else:
                        sel.unregister(key.fd)
        finally:
            sel.close()

    def settle(self, region: Region, ended: str) -> None:
        """After the child's tree is dead: take its last frames, then decide what ended it."""
        # After a timeout, what the child published past its deadline does not count.
        if ended == "exited" and not self.take(region):
            if not self.late:
                return
            ended = "timeout"
        if self.next >= self.n or ended == "broke" or self.stopped:
            return
        if ended == "timeout":
            self.untimed = self.untimed or self.late
            whole = time.monotonic() >= self.budget_end
            self.fail_one("timeout", "candidate time limit" if whole else "case time limit")
            self.timeouts += 1
            if whole or 0 < self.max_timeouts <= self.timeouts:
                self.stopped = True
        else:
            self.fail_one("crash", "process died during the case")

    def fail_one(self, status: str, detail: str) -> None:
        """Mark the running case."""
        if self.next < self.n:
            self.obs[self.next] = {"status": status, "detail": detail}
            self.next += 1

    def fail_last(self, status: str, detail: str) -> None:
        """An extra frame after the last case: the last case did not end cleanly."""
        self.obs[self.n - 1] = {"status": status, "detail": detail}

    def fail_rest(self, status: str, detail: str) -> None:
        """Mark every case not yet decided and stop."""
        for k in range(self.next, self.n):
            self.obs[k] = {"status": status, "detail": detail}
        self.next, self.stopped = self.n, True


def _sealed_memfd(name: str, data: bytes, size: int = 0) -> int:
    """A memfd holding ``data`` (``size`` bytes long), sealed against resizing.

    The candidate's process maps it too: sealed, it can neither shrink it under our
    mapping (a ``SIGBUS`` in the supervisor) nor add seals of its own.
    """
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        if data:
            os.write(fd, data)
        if size:
            os.ftruncate(fd, size)
        seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except OSError:
        os.close(fd)
        raise
    return fd


def reap() -> None:
    """Reap every child that has ended, without blocking."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _read_some(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except OSError:  # BlockingIOError included
        return b""


def _empty_dir(top: str) -> None:
    """Delete everything below ``top`` without recursion, fixing permissions on the way."""
    stack = [(top, False)]
    while stack:
        path, visited = stack.pop()
        if visited:
            if path != top:
                os.rmdir(path)
            continue
        os.chmod(path, 0o700)
        stack.append((path, True))
        with os.scandir(path) as it:
            for entry in it:
                if entry.is_dir(follow_symlinks=False):
                    stack.append((entry.path, False))
                else:
                    os.unlink(entry.path)


def supervisor_main(pidns: bool, scratch: str, ctl: socket.socket) -> int:
    """The supervisor: serve jobs read from stdin until EOF; return its exit code.

    It lives as long as the worker and holds every job it served, but no candidate
    ever runs in a process forked from it: init forks each child.
    """
    job_proc = Job(pidns, scratch, ctl)
    while True:
        hdr = read_exact(0, 4)
        if hdr is None:
            return EXIT_EOF
        (size,) = _HDR.unpack(hdr)
        raw = read_exact(0, size) if size <= _MAX_JOB else None
        if raw is None:
            return EXIT_EOF
        try:
            job = json.loads(raw)
            _check_job(job)
        except (ValueError, KeyError, TypeError, RecursionError):
            write_frame(1, {"infra_error": "bad_job"})
            ctl.send(b"U")
            return EXIT_BAD_JOB
        del raw
        reply, broke = job_proc.serve(job)
        clean = not broke and job_proc.wipe()
        reply["recycle"] = not clean
        write_frame(1, reply)
        del job, reply
        # Unclean from here on, init's done says so (the grader reads both).
        clean = clean and _trimmed()
        ctl.send(b"R" if clean else b"U")
        if not clean:
            return EXIT_DIRTY


def _trimmed() -> bool:
    """Give back what the job made us hold (a large result, a flood of output).

    The supervisor lives on and shares the tree's memory cap with every later
    candidate: what its heap keeps would be taken from theirs. False (replace the
    worker) when it cannot get back under :data:`_SUPERVISOR_RSS`.
    """
    if _rss() <= _SUPERVISOR_RSS:
        return True
    gc.collect()
    _LIBC.malloc_trim(0)
    return _rss() <= _SUPERVISOR_RSS


def _rss() -> int:
    """Our resident set, in bytes."""
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * resource.getpagesize()


def _check_job(job: Any) -> None:
    """Raise when a job is not what the grader sends (a grader bug, never a candidate's)."""
    if not isinstance(job, dict) or not isinstance(job["code"], str):
        raise TypeError("job")
    if not isinstance(job["fn"], str) or not isinstance(job["cases"], list):
        raise TypeError("job")
    programs_ = job.get("programs", [])
    if not isinstance(programs_, list) or not all(isinstance(p, str) for p in programs_):
        raise TypeError("programs")
    for case in job["cases"]:
        if not isinstance(case["timeout_s"], int | float):
            raise TypeError("case")
        kind = case.get("kind", "function")
        if kind == "stdio" and not isinstance(case["stdin"], str):
            raise TypeError("case")
        if kind == "program" and not (
            type(case["program"]) is int
            and 0 <= case["program"] < len(programs_)
            and isinstance(case["test"], str)
        ):
            raise TypeError("case")
        if kind not in ("function", "stdio", "program"):
            raise TypeError("case")
    for key in ("candidate_timeout_s", "output_bytes", "result_bytes", "memory_mb"):
        if not isinstance(job["limits"][key], int | float):
            raise TypeError("limits")


# ---------------------------------------------------------------- init


class Init:
    """The first process: forks the supervisor once and a child per run; sweeps after each job.

    It never reads a job or a result: a job reaches a child as a memfd the supervisor
    filled, passed through here unread, so every child forks from a heap that holds
    nothing of any job.
    """

    def __init__(self, pidns: bool, scratch: str) -> None:
        self.pidns = pidns
        self.scratch = scratch
        self.supervisor = 0
        self.child = 0  # the running child's pid, and its sequence number below
        self.child_seq = 0
        self.tests_loaded = False  # unittest, loaded on the first job with test programs

    def loop(self) -> None:
        """Serve until stdin closes or the sandbox cannot be made clean."""
        ctl = self._start_supervisor()
        r, w = os.pipe()
        os.set_blocking(r, False)
        os.set_blocking(w, False)
        signal.set_wakeup_fd(w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        sel = selectors.DefaultSelector()
        sel.register(ctl, selectors.EVENT_READ)
        sel.register(r, selectors.EVENT_READ)
        while True:
            for key, _ in sel.select():
                if key.fd == r:
                    _read_some(r)
                    ended = self._reap(ctl)
                else:
                    ended = self._on_message(ctl)
                if ended is not None:
                    if ended != EXIT_EOF:  # not clean: the grader replaces us
                        write_frame(1, {"done": True, "clean": False})
                    return

    def _start_supervisor(self) -> socket.socket:
        """Fork the supervisor; return our end of the control channel to it."""
        ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        gc.freeze()
        self.supervisor = os.fork()
        if self.supervisor == 0:
            code = EXIT_DIRTY
            try:
                ctl.close()
                code = supervisor_main(self.pidns, self.scratch, theirs)
            finally:
                os._exit(code)
        theirs.close()
        return ctl

    def _on_message(self, ctl: socket.socket) -> int | None:
        """Act on one message of the supervisor; an exit code once we must stop."""
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 16, 4)
        except OSError:  # it closed with our messages unread (ECONNRESET): it ended
            msg, fds = b"", []
        if not msg:
            return self._wait_supervisor()
        if msg[:1] in (b"F", b"T") and msg[1:].isdigit() and len(fds) == 2:
            if msg[:1] == b"T" and not self.tests_loaded:
                programs.load_unittest()  # never before: most workers never need it
                genuine.prepare()  # its exception classes are genuine too
                self.tests_loaded = True
            self._fork_child(ctl, int(msg[1:]), fds[0], fds[1])
            return None
        for fd in fds:
            os.close(fd)
        if msg == b"R" and self.sweep():
            write_frame(1, {"done": True, "clean": True})
            return None
        return EXIT_DIRTY

    def _fork_child(self, ctl: socket.socket, seq: int, jobfd: int, regionfd: int) -> None:
        """Fork a child onto the supervisor's memfds; hand its output pipes over."""
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        gc.freeze()  # the child's collector then never touches (and copies) our pages
        pid = os.fork()
        if pid == 0:
            _child_boot(jobfd, regionfd, {"out": (out_r, out_w), "err": (err_r, err_w)})
        self.child, self.child_seq = pid, seq
        for fd in (out_w, err_w, jobfd, regionfd):
            os.close(fd)
        try:
            socket.send_fds(ctl, [b"P%d:%d" % (seq, pid)], [out_r, err_r])
        finally:
            os.close(out_r)
            os.close(err_r)

    def _wait_supervisor(self) -> int:
        """Wait for the supervisor to end (it closed the channel); its exit code."""
        while True:
            try:
                pid, status = os.waitpid(-1, 0)
            except ChildProcessError:
                return EXIT_DIRTY
            if pid == self.supervisor:
                return os.waitstatus_to_exitcode(status)

    def _reap(self, ctl: socket.socket) -> int | None:
        """Reap what ended, telling the supervisor when its child did; its exit code once it did."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return EXIT_DIRTY
            if pid == 0:
                return None
            if pid == self.supervisor:
                return os.waitstatus_to_exitcode(status)
            if pid == self.child:  # said by sequence number: the pid may come back
                self.child = 0
                with contextlib.suppress(OSError):
                    ctl.send(b"E%d" % self.child_seq)

    def sweep(self) -> bool:
        """Kill and reap whatever is left in the namespace; True when only we remain."""
        if not self.pidns:
            return True
        deadline = time.monotonic() + 5.0
        keep = ("1", str(self.supervisor))
        while others := [p for p in os.listdir("/proc") if p.isdigit() and p not in keep]:
            if time.monotonic() > deadline:
                return False
            for p in others:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(p), signal.SIGKILL)
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    return False
                if pid == self.supervisor:
                    return False  # it died: this worker is done
                if pid == 0:
                    break
            time.sleep(0.0005)
        return True


_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_LIBC: Any = None


def _prctl(option: int, value: int) -> None:
    if _LIBC.prctl(option, value, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"prctl({option}) failed")


def main() -> None:
    """Start as init: make ourselves unreachable, say ready, then serve jobs."""
    global _LIBC  # noqa: PLW0603 - set once at start, before any fork
    pidns = "--pidns" in sys.argv
    if pidns and os.getpid() != 1:
        write_frame(1, {"infra_error": "not_pid_1"})
        return
    _LIBC = ctypes.CDLL(None, use_errno=True)
    # Same-uid code may not ptrace us or open our /proc files (inherited by the
    # supervisor and the children, which fork from us).
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)  # orphans of a candidate are ours to reap (none backend)
    genuine.prepare()  # before any candidate: the classes expected errors match
    # The child keeps these stream objects: fds 0-2 are swapped under them after the
    # fork, which saves building new ones per candidate. We never print through them.
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(encoding="utf-8", errors="backslashreplace")  # type: ignore[union-attr]
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    # As PID 1, a signal with no handler is not delivered from inside the namespace.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    write_frame(1, {"ready": True, "python": sys.version})
    Init(pidns, os.getcwd()).loop()


if __name__ == "__main__":
    main()
