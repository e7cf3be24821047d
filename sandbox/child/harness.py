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
limits (rlimits), closes every descriptor but its own pipes, runs the cases in
order and reports each as a frame on its private result pipe. The zygote keeps
the wall clock per case and per candidate, kills the child's whole process tree
on a timeout or when the candidate is done, restarts a fresh child for the
remaining cases after a timeout or crash, and finally wipes the scratch dir,
``/tmp`` and ``/dev/shm`` so nothing is left for the next candidate.

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
import json
import os
import resource
import selectors
import signal
import stat
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


def _exc_info(exc: BaseException) -> dict[str, Any]:
    """Describe an exception as plain data; only genuine stdlib classes enter ``mro``."""
    mro = []
    for cls in type(exc).__mro__:
        mod = getattr(cls, "__module__", None)
        qual = getattr(cls, "__qualname__", None)
        if not isinstance(mod, str) or not isinstance(qual, str):
            continue
        top = mod.split(".")[0]
        if mod != "builtins" and top not in sys.stdlib_module_names:
            continue
        obj: Any = sys.modules.get(mod)
        for part in qual.split("."):
            obj = getattr(obj, part, None)
        if obj is cls:
            mro.append(f"{mod}.{qual}")
    try:
        message = str(exc)[:500]
    except BaseException:
        message = "<unprintable>"
    message = message.encode("utf-8", "backslashreplace").decode("utf-8")
    t = type(exc)
    return {
        "type": f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', '?')}",
        "mro": mro,
        "message": message,
    }


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


def child_main(job: dict[str, Any], start: int, res_w: int) -> None:
    """Run cases ``start..`` of one candidate in this (already forked) process."""
    lim = job["limits"]
    cap = lim["result_bytes"]
    namespace: dict[str, Any] = {"__name__": "candidate", "__builtins__": __builtins__}
    try:
        code = compile(job["code"], "<candidate>", "exec", dont_inherit=True)
        exec(code, namespace)
        fn = namespace.get(job["fn"])
        if not callable(fn):
            write_frame(res_w, {"load_error": f"no function named {job['fn']!r} is defined"})
            return
    except BaseException as exc:
        write_frame(res_w, {"load_error": "module raised " + _exc_info(exc)["type"]})
        return
    for i in range(start, len(job["cases"])):
        case = job["cases"][i]
        args = wire.from_wire(case["args"], allow_opaque=False)
        kwargs = wire.from_wire(case["kwargs"], allow_opaque=False)
        write_frame(res_w, {"i": i, "start": True})
        t0 = time.perf_counter()
        body: dict[str, Any]
        try:
            value = fn(*args, **kwargs)
        except BaseException as exc:
            body = {"status": "raised", "exc": _exc_info(exc)}
        else:
            body = _encode_result(value, cap)
        body["i"] = i
        body["duration_s"] = time.perf_counter() - t0
        _flush()  # what it printed survives a kill during a later case
        write_frame(res_w, body)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()


def _child_entry(job: dict[str, Any], start: int, pipes: dict[str, tuple[int, int]]) -> None:
    """Set up the forked child (descriptors, limits, signals) and run; never returns."""
    status = 0
    try:
        os.setsid()
        # SIGPIPE/SIGXFSZ stay ignored, as in any Python program: a write past the
        # file-size limit raises OSError in the candidate instead of killing it.
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(pipes["out"][1], 1)
        os.dup2(pipes["err"][1], 2)
        res_w = os.dup2(pipes["res"][1], 3)
        os.closerange(4, 1 << 16)
        _set_limits(job["limits"])
        sys.stdout = open(1, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False)  # noqa: SIM115
        sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 3000))
        child_main(job, start, res_w)
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
    def kill_all(self, pgid: int) -> None:
        """Kill every process the candidate started and wait until they are gone."""
        if not self.pidns:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            self._reap()
            return
        deadline = time.monotonic() + 5.0
        while True:
            with contextlib.suppress(ProcessLookupError):
                os.kill(-1, signal.SIGKILL)
            self._reap()
            others = [
                p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getpid())
            ]
            if not others:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(others)} candidate processes survived SIGKILL")
            time.sleep(0.001)

    @staticmethod
    def _reap() -> None:
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return

    def wipe(self) -> None:
        """Empty the scratch dir, /tmp and /dev/shm; raise if anything resists."""
        dirs = [self.scratch] + (list(_CLEAN_DIRS) if self.pidns else [])
        for d in dirs:
            for name in os.listdir(d):
                _remove(os.path.join(d, name))
        if self.pidns:
            for kind in ("shm", "msg", "sem"):
                with open(f"/proc/sysvipc/{kind}") as f:
                    if len(f.read().splitlines()) > 1:
                        raise RuntimeError(f"System V {kind} objects left behind")

    # -- one candidate
    def serve(self, job: dict[str, Any]) -> dict[str, Any]:
        """Run every case of one candidate, restarting after timeouts and crashes."""
        lim = job["limits"]
        n = len(job["cases"])
        obs: list[dict[str, Any] | None] = [None] * n
        out, err = Capture(lim["output_bytes"]), Capture(lim["output_bytes"])
        budget_end = time.monotonic() + lim["candidate_timeout_s"]
        start = 0
        while start < n:
            start = self._run_child(job, start, obs, out, err, budget_end)
        final = [o if o is not None else {"status": "not_run"} for o in obs]
        return {"obs": final, "stdout": out.text(), "stderr": err.text()}

    def _run_child(
        self,
        job: dict[str, Any],
        start: int,
        obs: list[dict[str, Any] | None],
        out: Capture,
        err: Capture,
        budget_end: float,
    ) -> int:
        """Fork one child for cases ``start..``; return the next case to start from."""
        n = len(job["cases"])
        pipes = {k: os.pipe() for k in ("res", "out", "err")}
        pid = os.fork()
        if pid == 0:
            _child_entry(job, start, pipes)
        for r, w in pipes.values():
            os.close(w)
            os.set_blocking(r, False)
        pidfd = os.pidfd_open(pid)
        mon = _Monitor(job, obs, start, budget_end)
        try:
            mon.watch(pidfd, pipes["res"][0], pipes["out"][0], pipes["err"][0], out, err)
        finally:
            self.kill_all(pid)
            # The tree is dead, so every write end is closed: drain to EOF, then judge.
            mon.drain(pipes["res"][0], pipes["out"][0], pipes["err"][0], out, err)
            os.close(pidfd)
            for r, _ in pipes.values():
                os.close(r)
        mon.finish()
        if mon.stop_all:
            return n
        return mon.next_start()


class _Monitor:
    """Follows one child's result frames and enforces per-case and per-candidate clocks."""

    def __init__(
        self, job: dict[str, Any], obs: list[dict[str, Any] | None], start: int, budget_end: float
    ) -> None:
        self.job = job
        self.obs = obs
        self.current: int | None = None
        self.expect_start = start
        self.case_end = budget_end
        self.budget_end = budget_end
        self.buf = bytearray()
        self.stop_all = False
        self.cap = job["limits"]["result_bytes"] + 4096
        self.exited = False
        self.broken = False
        self.done = False

    def next_start(self) -> int:
        """Where a fresh child should continue (the case after the one that failed)."""
        if self.current is not None:
            return self.current + 1
        return self.expect_start

    def watch(
        self, pidfd: int, res: int, out_fd: int, err_fd: int, out: Capture, err: Capture
    ) -> None:
        sel = selectors.DefaultSelector()
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        sel.register(res, selectors.EVENT_READ, "res")
        sel.register(out_fd, selectors.EVENT_READ, out)
        sel.register(err_fd, selectors.EVENT_READ, err)
        try:
            while not (self.exited or self.stop_all or self.broken or self.done):
                timeout = min(self.case_end, self.budget_end) - time.monotonic()
                if timeout <= 0:
                    self._timed_out()
                    return
                for key, _ in sel.select(timeout):
                    self._on_ready(key, sel)
        finally:
            sel.close()

    def finish(self) -> None:
        """After the tree is dead and drained: a case left open died with the process."""
        if self.stop_all or self.broken:
            return
        self._on_exit()

    def _on_ready(self, key: selectors.SelectorKey, sel: selectors.BaseSelector) -> None:
        if key.data == "exit":
            self.exited = True
            return
        chunk = _read_some(key.fd)
        if not chunk:
            sel.unregister(key.fd)
            return
        if key.data == "res":
            self.buf += chunk
            self._parse()
        else:
            key.data.feed(chunk)

    def drain(self, res: int, out_fd: int, err_fd: int, out: Capture, err: Capture) -> None:
        for fd, sink in ((out_fd, out), (err_fd, err)):
            while chunk := _read_some(fd):
                sink.feed(chunk)
        while not self.stop_all and (chunk := _read_some(res)):
            self.buf += chunk
            self._parse()

    def _parse(self) -> None:
        while len(self.buf) >= 4 and not self.broken:
            (size,) = _HDR.unpack_from(self.buf)
            if size > self.cap:
                self._violation("result frame larger than the limit")
                return
            if len(self.buf) < 4 + size:
                return
            raw = bytes(self.buf[4 : 4 + size])
            del self.buf[: 4 + size]
            try:
                frame = json.loads(raw)
            except ValueError:
                self._violation("malformed result frame")
                return
            self._on_frame(frame)

    def _on_frame(self, frame: Any) -> None:
        if not isinstance(frame, dict):
            self._violation("malformed result frame")
            return
        if "load_error" in frame and self.current is None:
            detail = str(frame["load_error"])[:300]
            for k in range(self.expect_start, len(self.obs)):
                self.obs[k] = {"status": "crash", "detail": detail}
            self.stop_all = True
            return
        i = frame.get("i")
        if type(i) is not int:
            self._violation("malformed result frame")
            return
        if frame.get("start") is True and self.current is None and i == self.expect_start:
            self.current = i
            t = self.job["cases"][i]["timeout_s"]
            self.case_end = min(self.budget_end, time.monotonic() + t)
            return
        if self.current is not None and i == self.current and "status" in frame:
            self.obs[i] = frame
            self.expect_start = i + 1
            self.current = None
            self.case_end = self.budget_end
            self.done = self.expect_start >= len(self.obs)
            return
        self._violation("unexpected result frame")

    def _violation(self, detail: str) -> None:
        i = self.current if self.current is not None else self.expect_start
        if i < len(self.obs):
            self.obs[i] = {"status": "crash", "detail": detail}
        self.current = i
        self.broken = True

    def _timed_out(self) -> None:
        i = self.current if self.current is not None else self.expect_start
        whole = time.monotonic() >= self.budget_end
        if i < len(self.obs):
            self.obs[i] = {
                "status": "timeout",
                "detail": "candidate time limit" if whole else "case time limit",
            }
        self.current = i
        self.stop_all = whole

    def _on_exit(self) -> None:
        if self.current is not None:
            if self.obs[self.current] is None:
                self.obs[self.current] = {
                    "status": "crash",
                    "detail": "process died during the case",
                }
        elif self.expect_start < len(self.obs):
            self.obs[self.expect_start] = {
                "status": "crash",
                "detail": "process died before the case started",
            }
            self.current = self.expect_start


def _read_some(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except BlockingIOError:
        return b""
    except OSError:
        return b""


def _remove(path: str) -> None:
    st = os.lstat(path)
    if stat.S_ISDIR(st.st_mode):
        os.chmod(path, 0o700)
        for name in os.listdir(path):
            _remove(os.path.join(path, name))
        os.rmdir(path)
    else:
        os.unlink(path)


def _nondumpable() -> None:
    """PR_SET_DUMPABLE 0: same-uid code may not ptrace us or open our /proc files."""
    libc = ctypes.CDLL(None, use_errno=True)
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
            zygote.wipe()
        except Exception as exc:
            write_frame(1, {"infra_error": f"{type(exc).__name__}: {exc}"[:500]})
            return
        write_frame(1, reply)


if __name__ == "__main__":
    main()
