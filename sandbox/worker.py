"""One sandbox worker: the harness inside the isolation, seen from the grader.

The grader side never trusts the worker: every read has a deadline, every frame
a size cap and a fixed shape, and anything unexpected ends the worker (the pool
starts a fresh one). Per job the worker sends exactly two frames: the job
process's reply, then init's ``done`` (see ``sandbox/child/harness.py``).
Bytes waiting before a job is sent, a reply that arrives before the job was
fully written, or bytes after ``done`` mean something in the sandbox reached
the pipes: the worker is discarded (:class:`WorkerTainted`). A worker that
dies or goes silent while a candidate runs is the candidate's doing
(``crash``/``timeout``); one that fails before or between candidates is an
infrastructure error.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import select
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import asdict
from typing import IO, Any

from sandbox.backends import Launch, filter_pipe, stop_worker_process
from sandbox.cgroups import CgroupTree
from sandbox.errors import WorkerError
from sandbox.types import Limits

__all__ = ["Worker", "WorkerDied", "WorkerSilent", "WorkerTainted"]

_HDR = struct.Struct(">I")
_READY_TIMEOUT_S = 20.0
_MAX_REPLY = 256 * 1024 * 1024
_READ_BYTES = 1 << 16
"""Bytes asked of one read of the worker's pipe (its capacity): ``os.read`` allocates
what it is asked for before it reads, so 1 MiB per read cost an allocation of that size
(an ``mmap`` and its unmapping) for each reply of a few hundred bytes."""


class WorkerDied(WorkerError):
    """The worker process ended (or broke protocol) while serving a candidate."""


class WorkerSilent(WorkerError):
    """The worker did not answer before its deadline."""


class WorkerTainted(WorkerError):
    """The pipes carried bytes nobody asked for before the job ran: replace the worker."""


_DONE_TIMEOUT_S = 10.0
_WRAPPER_EXIT_S = 10.0
"""How long a wrapper may take to end once its zygote was killed (the namespace's
teardown); then its whole group is killed."""
_REPLY_KEYS = {"obs", "stdout", "stderr", "untimed", "recycle"}


class Worker:
    """A running zygote; :meth:`serve` runs one candidate job through it."""

    def __init__(
        self,
        launch: Launch,
        spawner: Executor,
        cgroup: CgroupTree | None = None,
        on_spawn: Callable[[subprocess.Popen[bytes]], None] | None = None,
    ) -> None:
        """Start the worker and wait until its zygote says it is ready.

        Args:
            launch: How to start it.
            spawner: A long-lived thread that forks the worker. bwrap's
                ``--die-with-parent`` watches the *thread* that forked it, so the
                fork must happen on a thread that lives as long as the sandbox.
            cgroup: The worker's cgroup, joined once the zygote is ready (before
                any candidate runs), removed when the worker ends.
            on_spawn: Called with the process as soon as it exists, before the wait
                for its zygote: the owner can kill a worker that is still starting.
        """
        self._launch = launch
        self._cgroup = cgroup
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 - lives with the worker
        self.recycle = False
        self._killed = False
        self._hits: dict[str, int] = {}
        fd = filter_pipe(launch.seccomp) if launch.seccomp is not None else None
        try:
            self._proc = spawner.submit(
                subprocess.Popen,
                launch.command(fd),
                pass_fds=() if fd is None else (fd,),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=launch.env,
                cwd=launch.cwd,
                start_new_session=True,
                close_fds=True,
                user=launch.user,
                group=launch.user,
                extra_groups=[] if launch.user is not None else None,
            ).result()
        except (OSError, RuntimeError) as exc:  # RuntimeError: the sandbox is closing
            raise WorkerError(f"could not start a sandbox worker: {exc}") from exc
        finally:
            if fd is not None:
                os.close(fd)
        if on_spawn is not None:
            on_spawn(self._proc)
        if self._proc.stdin is None or self._proc.stdout is None:  # pragma: no cover
            raise WorkerError("sandbox worker started without pipes")
        self._in = self._proc.stdin.fileno()
        self._out = self._proc.stdout.fileno()
        os.set_blocking(self._out, False)
        os.set_blocking(self._in, False)
        self._buf = bytearray()
        try:
            hello = self._read_frame(time.monotonic() + _READY_TIMEOUT_S)
        except WorkerError as exc:
            self.close()
            raise WorkerError(f"sandbox worker did not start: {exc}; {self.stderr_tail()}") from exc
        if hello.get("ready") is not True:
            self.close()
            why = str(hello.get("infra_error"))[:100]
            raise WorkerError(f"sandbox worker refused to start: {why}; {self.stderr_tail()}")
        self.python_version = str(hello.get("python", "?"))
        if cgroup is not None:
            try:
                cgroup.add_tree(self._proc.pid)
            except OSError as exc:
                self.close()
                raise WorkerError(f"could not confine the worker to its cgroup: {exc}") from exc

    def caps_hit(self) -> tuple[str, ...]:
        """The tree caps (``processes``, ``memory``) hit since the last job was sent."""
        if self._cgroup is None:
            return ()
        now = self._cgroup.hits()
        return tuple(k for k, v in sorted(now.items()) if v > self._hits.get(k, 0))

    @property
    def alive(self) -> bool:
        """True while the worker process runs."""
        return self._proc.poll() is None

    def serve(self, job: dict[str, Any], limits: Limits, grace_s: float = 3.0) -> dict[str, Any]:
        """Send one candidate job and wait for its reply and the sandbox's ``done``.

        Returns the reply (``obs``, ``stdout``, ``stderr``); :attr:`recycle` says
        whether the worker must be replaced afterwards.

        Raises:
            WorkerTainted: Bytes were waiting before the job, or a reply came
                before the job was fully written (nothing of this job ran yet).
            WorkerDied: The worker ended or broke protocol (the candidate did it).
            WorkerSilent: No reply within the candidate's limit plus ``grace_s``.
            WorkerError: The harness reported an internal failure.
        """
        job = dict(job, limits=_limits_dict(limits))
        data = json.dumps(job, ensure_ascii=True, allow_nan=False).encode("ascii")
        self._hits = self._cgroup.hits() if self._cgroup is not None else {}
        if self._buf or _readable(self._out, 0.0):
            raise WorkerTainted("bytes were waiting on the worker's pipe before the job")
        self._send(_HDR.pack(len(data)) + data)
        deadline = time.monotonic() + limits.candidate_timeout_s + grace_s
        reply = self._read_frame(deadline)
        if "infra_error" in reply:
            raise WorkerError("sandbox worker refused the job")
        if set(reply) != _REPLY_KEYS or not all(
            isinstance(reply[k], bool) for k in ("recycle", "untimed")
        ):
            raise WorkerDied("the supervisor ended without a proper reply")
        done = self._read_frame(time.monotonic() + _DONE_TIMEOUT_S)
        if set(done) != {"done", "clean"} or done["done"] is not True:
            raise WorkerDied("the sandbox sent something other than done after the reply")
        self.recycle = reply["recycle"] or done["clean"] is not True
        if self._buf or _readable(self._out, 0.0):
            self.recycle = True  # someone else wrote to the pipe: never trust it again
        return reply

    def _send(self, data: bytes) -> None:
        """Write a job, watching for an answer that must not come before it is all written."""
        view = memoryview(data)
        try:
            while view:
                r, w, _ = select.select([self._out], [self._in], [], 30.0)
                if r:
                    raise WorkerTainted("the worker answered before its job was fully written")
                if not w:
                    raise WorkerDied("worker stopped reading its job")
                try:
                    view = view[os.write(self._in, view[: 1 << 16]) :]
                except BlockingIOError:
                    continue
        except OSError as exc:
            raise WorkerDied(f"worker gone before the job was sent: {exc}") from exc

    def _read_frame(self, deadline: float) -> dict[str, Any]:
        while True:
            if len(self._buf) >= 4:
                (size,) = _HDR.unpack_from(self._buf)
                if size > _MAX_REPLY:
                    raise WorkerDied("worker sent an oversized frame")
                if len(self._buf) >= 4 + size:
                    raw = bytes(self._buf[4 : 4 + size])
                    del self._buf[: 4 + size]
                    try:
                        frame = json.loads(raw)
                    except (ValueError, RecursionError) as exc:
                        raise WorkerDied("worker sent a malformed frame") from exc
                    if not isinstance(frame, dict):
                        raise WorkerDied("worker sent a malformed frame")
                    return frame
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerSilent("worker did not answer in time")
            ready, _, _ = select.select([self._out], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self._out, _READ_BYTES)
            except BlockingIOError:
                continue
            if not chunk:
                raise WorkerDied("worker process ended")
            self._buf += chunk

    def stderr_tail(self, limit: int = 2000) -> str:
        """The end of the worker's own stderr (bwrap and zygote messages)."""
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - limit))
            return self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""

    def kill(self) -> None:
        """Kill the worker now; :meth:`close` reaps it and cleans up.

        A pool killing all its workers first and closing them after lets their
        teardowns overlap. A wrapped worker's zygote is killed alone (its PID
        namespace goes with it) and the wrapper, which reaps it, then exits; any
        other worker's whole process group is killed.
        """
        if self._killed:
            return
        self._killed = True
        stop_worker_process(self._proc, self._launch.wrapped)

    def close(self) -> None:
        """Kill the worker, reap it and release its resources."""
        self.kill()
        try:
            self._proc.wait(timeout=_WRAPPER_EXIT_S)
        except subprocess.TimeoutExpired:  # the wrapper did not end with its child
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        self._stderr.close()
        for path in self._launch.cleanup:
            _rmtree_force(path)
        if self._cgroup is not None:
            self._cgroup.remove()


def _readable(fd: int, timeout: float) -> bool:
    ready, _, _ = select.select([fd], [], [], timeout)
    return bool(ready)


def _rmtree_force(path: str) -> None:
    """Delete a host scratch dir even if the candidate made it deep or read-only.

    Iterative (a candidate can nest directories deeper than our stack) and
    best effort: it never raises.
    """
    stack = [(path, False)]
    while stack:
        p, visited = stack.pop()
        with contextlib.suppress(OSError):
            if visited:
                os.rmdir(p)
                continue
            os.chmod(p, 0o700)
            stack.append((p, True))
            with os.scandir(p) as it:
                for entry in it:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, False))
                    else:
                        with contextlib.suppress(OSError):
                            os.unlink(entry.path)


@functools.lru_cache(maxsize=64)
def _limits_dict(limits: Limits) -> dict[str, Any]:
    """``asdict(limits)``, made once per limits (frozen); callers copy it into a job only."""
    return asdict(limits)
