"""The zygote: a small warm process inside the isolation that forks one child per candidate.

Runs as ``python -I -S -B harness.py [--pidns]`` inside the backend's isolation,
using the standard library only. The grader talks to it over stdin/stdout with
length-prefixed JSON frames:

* zygote -> grader, once: ``{"ready": true, "python": "3.11.2"}``
* grader -> zygote, per candidate: ``{"code", "fn", "cases": [{"args", "kwargs",
  "timeout_s"}], "limits": {...}}`` (arguments only: expected values never come here)
* zygote -> grader, per candidate: ``{"obs": [...], "stdout", "stderr"}`` or
  ``{"infra_error": "..."}`` followed by exit.

Per candidate the zygote forks a child, which drops into the candidate's
limits (rlimits), closes every descriptor but its output pipes, runs the cases
in order and appends each result as a frame to a shared memory region (a
:class:`Region`, created by the zygote before the fork, so results written
before a crash survive it and no case costs a system call or a wake-up). The
zygote sleeps until the child exits or the running case's deadline passes,
kills the child's whole process tree, reads the region, continues with a fresh
child after a timeout or crash (until ``max_timeouts`` timeouts), and finally
wipes the scratch dir, ``/tmp`` and ``/dev/shm`` so nothing is left for the
next candidate.

The zygote is made non-dumpable, so candidate code (same uid) can neither
ptrace it nor open its ``/proc/<pid>/fd`` or ``mem``. A candidate can still
kill or stop it: the grader then sees a dead or silent worker, records the
candidate's cases as ``crash``/``timeout`` and starts a fresh worker.

Whatever the child writes is only a claim about its own behaviour: results are
values the candidate could have returned anyway, and they are compared with the
expected values outside, where the candidate cannot reach.
"""

from __future__ import annotations

import ctypes
import gc
import json
import mmap
import os
import resource
import selectors
import signal
import struct
import sys
import time
from typing import TYPE_CHECKING, Any

# -I leaves the script's own folder off sys.path; wire.py lives beside us.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
if TYPE_CHECKING:
    from sandbox.child import wire
else:
    import wire
import contextlib

_HDR = struct.Struct(">I")
_MAX_JOB = 64 * 1024 * 1024
_STOP_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)
_CLEAN_DIRS = ("/tmp", "/dev/shm")
_REGION_BYTES = 64 * 1024 * 1024
_POLL_S = 0.05
#: Deepest frame accepted: results are encoded at most 100 deep (wire.to_wire).
_MAX_FRAME_DEPTH = 120


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


# ---------------------------------------------------------------- results region


class Region:
    """Shared memory for one child's results: a header and length-prefixed JSON frames.

    Header (little endian): ``seq`` (a seqlock: odd while the child updates it)
    and ``offset`` (end of the published frames). The child keeps its own copies
    of both, so a candidate scribbling on the region can only garble its own
    results, which the zygote parses defensively. Nothing the child writes here
    drives the clocks: the zygote times each case itself, from the moment it
    sees the previous case's result published.
    """

    HEAD = struct.Struct("<qq")
    DATA = 64
    TAIL = 4096  # kept free for a short "too large" frame

    def __init__(self, size: int) -> None:
        self.mm = mmap.mmap(-1, size)  # anonymous and MAP_SHARED: survives the fork
        self.size = size
        self.seq = 0
        self.off = self.DATA
        self._publish()

    def _publish(self) -> None:
        self.HEAD.pack_into(self.mm, 0, self.seq + 1, self.off)
        self.seq += 2
        self.HEAD.pack_into(self.mm, 0, self.seq, self.off)

    def append(self, obj: dict[str, Any]) -> None:
        """Child: add one frame."""
        data = json.dumps(obj, ensure_ascii=True, allow_nan=False).encode("ascii")
        if self.off + 4 + len(data) > self.size - self.TAIL:
            small: dict[str, Any] = {k: obj[k] for k in ("i", "duration_s") if k in obj}
            small.update(status="unserializable", detail="results exceed the total limit")
            data = json.dumps(small).encode("ascii")[: self.TAIL - 4]
            if self.off + 4 + len(data) > self.size:
                return
        _HDR.pack_into(self.mm, self.off, len(data))
        self.mm[self.off + 4 : self.off + 4 + len(data)] = data
        self.off += 4 + len(data)
        self._publish()

    def published(self) -> int:
        """Zygote: the end of the published frames (a consistent snapshot, clamped)."""
        seq, off = self.HEAD.unpack_from(self.mm, 0)
        for _ in range(1000):
            if seq % 2 == 0 and self.HEAD.unpack_from(self.mm, 0)[0] == seq:
                break
            seq, off = self.HEAD.unpack_from(self.mm, 0)
        return int(min(max(off, self.DATA), self.size))

    def count(self) -> int:
        """Zygote: how many complete frames are published (lengths only, no parsing)."""
        end, pos, n = self.published(), self.DATA, 0
        while pos + 4 <= end:
            (size,) = _HDR.unpack_from(self.mm, pos)
            if pos + 4 + size > end:
                break
            pos, n = pos + 4 + size, n + 1
        return n

    def frames(self) -> list[Any]:
        """Zygote, after the child is dead: every frame in order; ``None`` for a bad one."""
        end, out, pos = self.published(), [], self.DATA
        while pos + 4 <= end:
            (n,) = _HDR.unpack_from(self.mm, pos)
            if pos + 4 + n > end:
                break
            try:
                frame = json.loads(self.mm[pos + 4 : pos + 4 + n])
            except (ValueError, RecursionError):
                frame = None
            out.append(frame if _depth_ok(frame, _MAX_FRAME_DEPTH) else None)
            if out[-1] is None:
                break
            pos += 4 + n
        return out

    def close(self) -> None:
        """Unmap the region."""
        self.mm.close()


def _depth_ok(obj: Any, limit: int) -> bool:
    """True when ``obj`` nests no deeper than ``limit`` (iterative: no recursion)."""
    stack = [(obj, 0)]
    while stack:
        o, d = stack.pop()
        if d > limit:
            return False
        if isinstance(o, dict):
            stack.extend((v, d + 1) for v in o.values())
        elif isinstance(o, list):
            stack.extend((v, d + 1) for v in o)
    return True


# ---------------------------------------------------------------- the child


#: Captured before any candidate code runs (in the zygote, before the fork): the
#: real ``type.__mro__`` getter (a metaclass cannot override it) and ``type``.
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_DICT = type.__dict__["__dict__"]
_TYPE_QUALNAME = type.__dict__["__qualname__"]
_type = type
#: id -> dotted name of every genuine exception class in builtins and in the
#: standard-library modules the zygote has loaded; filled in by :func:`snapshot`.
_GENUINE: dict[int, str] = {}
_SNAPSHOT_MODULES: set[str] = set()


def snapshot_exceptions() -> None:
    """Record the genuine builtin and loaded stdlib exception classes (zygote only)."""
    for mod_name, mod in list(sys.modules.items()):
        if mod_name != "builtins" and mod_name.split(".")[0] not in sys.stdlib_module_names:
            continue
        _SNAPSHOT_MODULES.add(mod_name)
        for attr, obj in list(vars(mod).items()):
            if isinstance(obj, type) and issubclass(obj, BaseException):
                qual = getattr(obj, "__qualname__", attr)
                if getattr(obj, "__module__", None) == mod_name and qual == attr:
                    _GENUINE[id(obj)] = f"{mod_name}.{qual}"
    # Keep the classes alive so their ids stay theirs.
    _GENUINE_KEEP.extend(
        obj
        for mod in list(sys.modules.values())
        for obj in vars(mod).values()
        if isinstance(obj, type) and id(obj) in _GENUINE
    )


_GENUINE_KEEP: list[type] = []


def _genuine_name(cls: Any) -> str | None:
    """The dotted name of ``cls`` if it is the genuine stdlib class of that name."""
    known = _GENUINE.get(id(cls))
    if known is not None:
        return known
    mod = _TYPE_DICT.__get__(cls).get("__module__")
    qual = _TYPE_QUALNAME.__get__(cls)
    if not isinstance(mod, str) or not isinstance(qual, str) or mod in _SNAPSHOT_MODULES:
        return None  # a look-alike of a class we know, or not named sanely
    if mod.split(".")[0] not in sys.stdlib_module_names:
        return None
    # A stdlib module first imported by the candidate: the best we can do in-process.
    obj: Any = sys.modules.get(mod)
    for part in qual.split("."):
        obj = getattr(obj, part, None)
    return f"{mod}.{qual}" if obj is cls else None


def _exc_info(exc: BaseException) -> dict[str, Any]:
    """Describe an exception as plain data; only genuine stdlib classes enter ``mro``.

    The MRO is read with the real ``type.__mro__`` getter and classes are matched
    by identity against a snapshot taken before the candidate ran, so a class
    that merely shares a name (or patches ``builtins``, a module attribute, or
    ``__mro__``) is left out. Code in the candidate's process could still forge
    this report, but a forged report can only claim what raising the genuine
    class would have produced; expected values are never here to be read.
    """
    t = _type(exc)
    mro = [n for n in (_genuine_name(c) for c in _TYPE_MRO.__get__(t)) if n is not None]
    try:
        message = str(exc)[:500]
    except BaseException:
        message = "<unprintable>"
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    try:
        name = f"{t.__module__}.{t.__qualname__}"
    except BaseException:
        name = "?"
    return {"type": str(name)[:200], "mro": mro, "message": message}


def _set_limits(lim: dict[str, Any]) -> None:
    mb = 1024 * 1024
    cpu = int(lim["candidate_timeout_s"]) + 1
    for res, val in (
        (resource.RLIMIT_AS, lim["memory_mb"] * mb),
        (resource.RLIMIT_CPU, cpu),
        (resource.RLIMIT_NPROC, lim["max_procs"]),
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
    """Run cases ``start..`` of one candidate in this (already forked) process."""
    cap = job["limits"]["result_bytes"]
    namespace: dict[str, Any] = {"__name__": "candidate", "__builtins__": __builtins__}
    try:
        code = compile(job["code"], "<candidate>", "exec", dont_inherit=True)
        exec(code, namespace)
        fn = namespace.get(job["fn"])
        if not callable(fn):
            region.append({"load_error": f"no function named {job['fn']!r} is defined"})
            return
    except BaseException as exc:
        region.append({"load_error": "module raised " + _exc_info(exc)["type"]})
        return
    for i in range(start, len(job["cases"])):
        case = job["cases"][i]
        args = wire.from_wire(case["args"], allow_opaque=False)
        kwargs = wire.from_wire(case["kwargs"], allow_opaque=False)
        t0 = time.monotonic()
        body: dict[str, Any]
        try:
            value = fn(*args, **kwargs)
        except BaseException as exc:
            body = {"status": "raised", "exc": _exc_info(exc)}
        else:
            body = _encode_result(value, cap)
        body["i"] = i
        body["duration_s"] = time.monotonic() - t0
        _flush()  # what it printed survives a kill during a later case
        region.append(body)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()


def _child_entry(
    job: dict[str, Any], start: int, region: Region, pipes: dict[str, tuple[int, int]]
) -> None:
    """Set up the forked child (descriptors, limits, signals) and run; never returns."""
    status = 0
    try:
        os.setsid()
        with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")  # if memory runs out, we are the one to go, not the zygote
        # SIGPIPE/SIGXFSZ stay ignored, as in any Python program: a write past the
        # file-size limit raises OSError in the candidate instead of killing it.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(pipes["out"][1], 1)
        os.dup2(pipes["err"][1], 2)
        os.closerange(3, 1 << 16)
        _set_limits(job["limits"])
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
        child_main(job, start, region)
        _flush()
    except BaseException:
        status = 70
    os._exit(status)


# ---------------------------------------------------------------- the zygote


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


class Zygote:
    """Serves candidates one at a time; see the module docstring."""

    def __init__(self, pidns: bool, scratch: str) -> None:
        self.pidns = pidns
        self.scratch = scratch

    # -- process tree control
    def kill_all(self, child: int) -> None:
        """Kill every process the candidate started and wait until they are gone.

        In a private PID namespace ``kill(-1)`` reaches every process but us and
        init, whatever session or group it moved to. Without one (``none``
        backend) only the child's process group is reachable: a known gap.
        """
        with contextlib.suppress(ProcessLookupError):
            if self.pidns:
                os.kill(-1, signal.SIGKILL)
            else:
                os.killpg(child, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(child, 0)  # SIGKILL cannot be caught: this returns promptly
        self._reap()
        if not self.pidns:
            return
        deadline = time.monotonic() + 5.0
        me = os.getpid()
        while others := [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(others)} candidate processes survived SIGKILL")
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
            self._reap()
            time.sleep(0.0005)

    @staticmethod
    def _reap() -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def wipe(self) -> bool:
        """Leave nothing for the next candidate; False when the worker must be replaced.

        Empties the scratch dir, ``/tmp`` and ``/dev/shm`` (iteratively: a deep tree
        cannot exhaust our stack), clears the user keyrings, and checks System V
        IPC, which only a fresh IPC namespace removes.
        """
        dirs = [self.scratch] + (list(_CLEAN_DIRS) if self.pidns else [])
        try:
            for d in dirs:
                _empty_dir(d)
        except OSError:
            return False
        if not self.pidns:
            return True
        _clear_keyrings()
        for kind in ("shm", "msg", "sem"):
            with open(f"/proc/sysvipc/{kind}") as f:
                if len(f.read().splitlines()) > 1:
                    return False
        return True

    # -- one candidate
    def serve(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run every case of one candidate, restarting after timeouts and crashes."""
        lim = job["limits"]
        n = len(job["cases"])
        run = _Run(job, time.monotonic() + lim["candidate_timeout_s"])
        while run.next < n and not run.stopped:
            self._run_child(run)
        final = [o if o is not None else {"status": "not_run"} for o in run.obs]
        return {"obs": final, "stdout": run.out.text(), "stderr": run.err.text()}

    def _run_child(self, run: _Run) -> None:
        """Fork one child for cases ``run.next..`` and record what became of them."""
        region = Region(_REGION_BYTES)
        pipes = {k: os.pipe() for k in ("out", "err")}
        gc.freeze()  # the child's collector then never touches (and copies) our pages
        pid = os.fork()
        if pid == 0:
            _child_entry(run.job, run.next, region, pipes)
        for r, w in pipes.values():
            os.close(w)
            os.set_blocking(r, False)
        pidfd = os.pidfd_open(pid)
        try:
            timed_out = run.wait(pidfd, region, pipes["out"][0], pipes["err"][0])
        finally:
            self.kill_all(pid)
            # The tree is dead, so every write end is closed: drain to EOF, then judge.
            for fd, sink in ((pipes["out"][0], run.out), (pipes["err"][0], run.err)):
                while chunk := _read_some(fd):
                    sink.feed(chunk)
                os.close(fd)
            os.close(pidfd)
        run.record(region.frames(), timed_out)
        region.close()


class _Run:
    """The state of one candidate across the children it takes."""

    def __init__(self, job: dict[str, Any], budget_end: float) -> None:
        lim = job["limits"]
        self.job = job
        self.n = len(job["cases"])
        self.obs: list[dict[str, Any] | None] = [None] * self.n
        self.out, self.err = Capture(lim["output_bytes"]), Capture(lim["output_bytes"])
        self.budget_end = budget_end
        self.max_timeouts = int(lim.get("max_timeouts", 0))
        self.timeouts = 0
        self.next = 0
        self.stopped = False

    def wait(self, pidfd: int, region: Region, out_fd: int, err_fd: int) -> bool:
        """Sleep until the child exits (False) or a deadline passes (True), draining output.

        Case ``k``'s clock starts on our own clock when we first see case ``k-1``'s
        result published (the first case's at the fork, so module-level code counts
        against it). The child cannot move that clock: it can only end a case early.
        """
        sel = selectors.DefaultSelector()
        sel.register(pidfd, selectors.EVENT_READ)
        sinks = {out_fd: self.out, err_fd: self.err}
        for fd in sinks:
            sel.register(fd, selectors.EVENT_READ)
        running, since = self.next, time.monotonic()
        try:
            while True:
                now = time.monotonic()
                done = self.next + region.count()
                if done > running:
                    running, since = done, now
                deadline = self.budget_end
                if running < self.n:
                    deadline = min(deadline, since + self.job["cases"][running]["timeout_s"])
                if deadline <= now:
                    return True
                # Cases start without telling us (no wake-up per case): look again soon.
                for key, _ in sel.select(min(deadline - now, _POLL_S)):
                    if key.fd == pidfd:
                        return False
                    chunk = _read_some(key.fd)
                    if chunk:
                        sinks[key.fd].feed(chunk)
                    else:
                        sel.unregister(key.fd)
        finally:
            sel.close()

    def record(self, frames: list[Any], timed_out: bool) -> None:
        """Take the child's frames, then decide what ended it."""
        for frame in frames:
            if not isinstance(frame, dict):
                self._fail("crash", "malformed result frame")
                return
            if "load_error" in frame:
                detail = str(frame["load_error"])[:300]
                for k in range(self.next, self.n):
                    self.obs[k] = {"status": "crash", "detail": detail}
                self.next, self.stopped = self.n, True
                return
            if type(frame.get("i")) is not int or frame["i"] != self.next or "status" not in frame:
                self._fail("crash", "unexpected result frame")
                return
            self.obs[self.next] = frame
            self.next += 1
        if self.next >= self.n:
            return
        if timed_out:
            whole = time.monotonic() >= self.budget_end
            self._fail("timeout", "candidate time limit" if whole else "case time limit")
            self.timeouts += 1
            if whole or 0 < self.max_timeouts <= self.timeouts:
                self.stopped = True
        else:
            self._fail("crash", "process died during the case")

    def _fail(self, status: str, detail: str) -> None:
        if self.next < self.n:
            self.obs[self.next] = {"status": status, "detail": detail}
            self.next += 1


def _read_some(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return b""
    except OSError:
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


_KEYCTL = {"x86_64": 250, "aarch64": 219}
_KEYCTL_CLEAR = 7
_KEY_SPEC_USER_KEYRING = -4
_KEY_SPEC_USER_SESSION_KEYRING = -5


def _clear_keyrings() -> None:
    """Empty the user keyrings, which outlive a candidate (same uid, same namespace)."""
    nr = _KEYCTL.get(os.uname().machine)
    if nr is None or _LIBC is None:
        return
    for ring in (_KEY_SPEC_USER_KEYRING, _KEY_SPEC_USER_SESSION_KEYRING):
        _LIBC.syscall(nr, _KEYCTL_CLEAR, ring)


_LIBC: Any = None


def _nondumpable() -> None:
    """PR_SET_DUMPABLE 0: same-uid code may not ptrace us or open our /proc files."""
    global _LIBC  # noqa: PLW0603 - set once at zygote start, before any fork
    libc = _LIBC = ctypes.CDLL(None, use_errno=True)
    pr_set_dumpable = 4
    if libc.prctl(pr_set_dumpable, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE) failed")


def main() -> None:
    """Serve candidates until stdin closes."""
    pidns = "--pidns" in sys.argv
    if pidns and os.getpid() > 2:
        write_frame(1, {"infra_error": "--pidns given but not in a fresh PID namespace"})
        return
    _nondumpable()
    # The child keeps these stream objects: fds 0-2 are swapped under them after the
    # fork, which saves building new ones per candidate. We never print through them.
    snapshot_exceptions()
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(encoding="utf-8", errors="backslashreplace")  # type: ignore[union-attr]
    for sig in _STOP_SIGNALS:
        signal.signal(sig, signal.SIG_IGN)
    zygote = Zygote(pidns, os.getcwd())
    write_frame(1, {"ready": True, "python": sys.version.split()[0]})
    while True:
        hdr = read_exact(0, 4)
        if hdr is None:
            return
        (size,) = _HDR.unpack(hdr)
        raw = read_exact(0, size) if size <= _MAX_JOB else None
        if raw is None:
            return
        try:
            reply = zygote.serve(json.loads(raw))
        except Exception as exc:
            write_frame(1, {"infra_error": f"{type(exc).__name__}: {exc}"[:500]})
            return
        clean = zygote.wipe()
        reply["recycle"] = not clean
        write_frame(1, reply)
        if not clean:
            return  # the grader replaces us: a fresh sandbox is the only clean one


if __name__ == "__main__":
    main()
