"""Run one command line in a fresh bubblewrap sandbox: the patch gate's test runner.

Where :mod:`sandbox.runner` keeps warm workers that call one function per
candidate, :func:`run_command` starts one sandbox per call for a whole program
(a repository's pytest), with the same isolation as candidates get:

* bubblewrap namespaces (user, PID, network, IPC, UTS, cgroup, mount), the
  unprivileged uid ``nobody`` inside (and on the host when the grader is
  root), no capabilities, no further user namespaces, the seccomp filter of
  :mod:`sandbox.seccomp`, an empty environment but for what the caller sets;
* a read-only ``/usr`` (and ``/bin``, ``/lib``...), the caller's read-only
  mounts (a virtual environment), its copied mounts (a work tree: a private
  tmpfs of capped size filled with a copy, so writes never reach the host's
  disk and count against the tree's memory), writable host mounts when asked
  for, and nothing else of the host; private tmpfs ``/tmp``, ``/dev/shm`` and
  ``/scratch`` of capped size;
* limits from outside: a fresh cgroup caps memory and processes of the whole
  tree (:mod:`sandbox.cgroups`; the command does not start until the tree is
  inside it), ``ulimit`` caps core files, file size, open files and address
  space before the command is ``exec``-ed, a wall clock kills everything in
  the cgroup and the sandbox;
* stdout and stderr go to host files of which at most ``output_bytes`` are read
  back; a ``result_file`` inside the sandbox (a report the command writes) is
  handed back on stdout by the first process once the command ends, at most
  ``result_bytes`` of it, so no host directory has to be writable.

Nothing survives a call: the tmpfs mounts, the PID namespace and the cgroup end
with it. Only the bubblewrap backend exists here: a patch's tests are never run
without isolation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Literal

from sandbox.backends import NOBODY, SECCOMP_FD, filter_pipe, stop_worker_process
from sandbox.cgroups import CgroupTree, find_tree_cap
from sandbox.errors import IsolationUnavailable
from sandbox.seccomp import compile_filter

__all__ = ["CommandLimits", "CommandResult", "Mount", "run_command"]

_BASE_ENV = {
    "HOME": "/scratch",
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
}
_GO = (
    'ulimit -c 0; ulimit -f "$1"; ulimit -n "$2"; ulimit -v "$3"; out=$4; max=$5; n=$6; shift 6; '
    "read -r _; "
    'i=0; while [ "$i" -lt "$n" ]; do cp -a "$1/." "$2/" 2>/dev/null; shift 2; i=$((i + 1)); '
    "done; "
    'if [ -z "$out" ]; then "$@"; exit $?; fi; '
    '"$@" >&2; c=$?; head -c "$max" -- "$out" 2>/dev/null; exit $c'
)
"""The sandbox's first process, PID 1 of its namespace (bubblewrap's ``--as-pid-1``): set
the limits, wait for the grader's go (the tree is in its cgroup by then), fill the copied
mounts, then run the command as its child (never as PID 1, which the kernel shields from
signals it has no handler for), with its stdout on stderr and the result file on stdout
when one is asked for; its exit status is the command's. No bubblewrap reaper runs inside:
bubblewrap's outer process exits without reaping it (upstream #697), a zombie per command
where the host's init does not reap, while a child of its own it reaps."""
_SRC = "/.gradebox-src"


@dataclass(frozen=True, slots=True)
class Mount:
    """A host directory visible inside the sandbox."""

    host: Path
    """The directory on the host (it must be readable by ``nobody`` when the grader is root)."""
    inside: str
    """Absolute path inside the sandbox."""
    writable: bool = False
    """Writable (handed to ``nobody`` first when the grader is root) or read-only."""
    copy: bool = False
    """A private tmpfs at ``inside`` (``tmp_mb`` big, charged to the tree's memory) filled
    with a copy of ``host`` before the command starts: writes never reach the host disk.
    Mounts listed after it may sit inside it (read-only parts of the copy)."""


@dataclass(frozen=True, slots=True)
class CommandLimits:
    """Limits on one command's whole process tree, all enforced from outside it."""

    timeout_s: float = 600.0
    """Wall clock for the whole command."""
    memory_mb: int = 2048
    """Memory of the whole tree (cgroup) and address space per process (``ulimit -v``)."""
    max_procs: int = 256
    """Processes and threads in the tree at once (cgroup)."""
    max_file_mb: int = 256
    """Largest file a process may write (``ulimit -f``)."""
    max_open_files: int = 1024
    """Open descriptors per process (``ulimit -n``)."""
    tmp_mb: int = 256
    """Size of each of ``/tmp``, ``/dev/shm`` and ``/scratch``."""
    output_bytes: int = 64 * 1024
    """Bytes kept of each of stdout and stderr."""
    tree_limits: bool = True
    """Cap the tree with a cgroup (refuse to run without one); False keeps ``ulimit`` only."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What one sandboxed command did, as seen from outside."""

    status: Literal["exited", "timeout", "infra_error"]
    """It ended by itself, was killed at the wall clock, or could not be run."""
    exit_code: int | None
    """Its exit status (negative: killed by that signal); ``None`` unless ``exited``."""
    stdout: str
    """The first ``output_bytes`` of its stdout, decoded with replacement."""
    stderr: str
    """The first ``output_bytes`` of its stderr."""
    wall_s: float
    """Seconds from start to end."""
    caps_hit: tuple[str, ...] = ()
    """Tree caps it ran into (``memory``, ``processes``)."""
    infra_error: str | None = None
    """Why it could not be run (``status == "infra_error"``): never the command's fault."""
    result: bytes | None = None
    """With ``result_file``: the first ``result_bytes`` of that file once the command ended
    (``None`` without one; empty when the file was missing)."""


def run_command(
    argv: Sequence[str],
    *,
    cwd: str,
    mounts: Sequence[Mount] = (),
    env: Mapping[str, str] | None = None,
    limits: CommandLimits | None = None,
    result_file: str | None = None,
    result_bytes: int = 32 * 1024 * 1024,
) -> CommandResult:
    """Run ``argv`` in a fresh sandbox and wait for it (never longer than the limit).

    Args:
        argv: The command, an absolute executable first (inside the sandbox).
        cwd: Working directory inside the sandbox (usually a writable mount).
        mounts: Host directories to show inside.
        env: Extra environment (over ``HOME=/scratch``, ``PATH``, ``LANG``...);
            nothing of the grader's environment is inherited.
        limits: Limits; the defaults when ``None``.
        result_file: A file inside the sandbox to hand back (``CommandResult.result``),
            so that output need not go to a writable host directory. The command's
            stdout then goes to stderr.
        result_bytes: At most this much of it is read.

    Returns:
        The result; a failure to start is ``infra_error``, never an exception.

    Raises:
        IsolationUnavailable: bubblewrap, the seccomp filter or (with
            ``tree_limits``) a cgroup for the tree is not available here.
    """
    lim = limits or CommandLimits()
    if shutil.which("bwrap") is None:
        raise IsolationUnavailable("bwrap is not installed (apt-get install -y bubblewrap)")
    program = compile_filter()
    cgroup = None
    if lim.tree_limits:
        cgroup = find_tree_cap().create(lim.memory_mb * 1024 * 1024, lim.max_procs)
    root = os.geteuid() == 0
    for m in mounts:
        if m.writable and root and not m.copy:
            _give_to_nobody(m.host)
    full_env = {**_BASE_ENV, **(env or {})}
    copies = [(f"{_SRC}/{i}", m.inside) for i, m in enumerate(mounts) if m.copy]
    command = [
        *_bwrap_argv(mounts, full_env, lim, cwd),
        *_go_argv(argv, lim, copies, result_file, result_bytes),
    ]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            res = _run(command, program, cgroup, lim, out, err, root=root)
            if result_file is None or res.status == "infra_error":
                return res
            out.seek(0)
            return dataclasses.replace(res, stdout="", result=out.read(result_bytes))
        finally:
            if cgroup is not None:
                _kill_all(cgroup)
                cgroup.remove()


def _run(
    command: list[str],
    program: bytes,
    cgroup: CgroupTree | None,
    lim: CommandLimits,
    out: IO[bytes],
    err: IO[bytes],
    *,
    root: bool,
) -> CommandResult:
    fd = filter_pipe(program)
    t0 = time.monotonic()
    try:
        proc = subprocess.Popen(
            [str(fd) if a == SECCOMP_FD else a for a in command],
            pass_fds=(fd,),
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            env=dict(_BASE_ENV),
            start_new_session=True,
            close_fds=True,
            user=NOBODY if root else None,
            group=NOBODY if root else None,
            extra_groups=[] if root else None,
        )
    except OSError as exc:
        return CommandResult("infra_error", None, "", "", 0.0, infra_error=f"bwrap: {exc}")
    finally:
        os.close(fd)
    try:
        if cgroup is not None:
            # Twice: a process bubblewrap forked while the first pass listed the
            # tree is its descendant by the second. Nothing runs the command yet.
            cgroup.add_tree(proc.pid)
            cgroup.add_tree(proc.pid)
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.write(b"go\n")
                proc.stdin.close()
        status: Literal["exited", "timeout"] = "exited"
        try:
            code: int | None = proc.wait(timeout=lim.timeout_s)
        except subprocess.TimeoutExpired:
            status, code = "timeout", None
    except OSError as exc:
        return CommandResult("infra_error", None, "", "", 0.0, infra_error=f"cgroup: {exc}")
    finally:
        if proc.returncode is None:  # never a reaped pid: it may name another group now
            # The shell (PID 1 inside) first, so that bubblewrap reaps it and exits:
            # killed together, it was left to the host's init (test_reaping.py).
            stop_worker_process(proc, wrapped=True)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(OSError):
                    os.killpg(proc.pid, signal.SIGKILL)
        if cgroup is not None:
            _kill_all(cgroup)
        proc.wait()
    wall = time.monotonic() - t0
    caps = () if cgroup is None else tuple(k for k, v in sorted(cgroup.hits().items()) if v)
    stdout, stderr = _head(out, lim.output_bytes), _head(err, lim.output_bytes)
    if status == "exited" and code == 1 and stderr.startswith("bwrap:"):
        return CommandResult("infra_error", None, "", "", wall, caps, stderr[:500])
    return CommandResult(status, code, stdout, stderr, wall, caps)


def _bwrap_argv(
    mounts: Sequence[Mount], env: Mapping[str, str], lim: CommandLimits, cwd: str
) -> list[str]:
    size = str(lim.tmp_mb * 1024 * 1024)
    argv = [
        "bwrap", "--unshare-all", "--unshare-user", "--disable-userns",
        "--uid", str(NOBODY), "--gid", str(NOBODY),
        "--die-with-parent", "--new-session", "--as-pid-1", "--cap-drop", "ALL",
        "--hostname", "sandbox", "--clearenv",
        "--ro-bind", "/usr", "/usr",
    ]  # fmt: skip
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    for place in ("/tmp", "/dev/shm", "/scratch"):  # noqa: S108 - private tmpfs inside
        argv += ["--size", size, "--tmpfs", place]
    argv += ["--remount-ro", "/dev"]
    for i, m in enumerate(mounts):
        if m.copy:
            argv += ["--ro-bind", str(m.host), f"{_SRC}/{i}", "--size", size, "--tmpfs", m.inside]
        else:
            argv += ["--bind" if m.writable else "--ro-bind", str(m.host), m.inside]
    argv += ["--remount-ro", "/"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return [*argv, "--seccomp", SECCOMP_FD, "--chdir", cwd]


def _go_argv(
    argv: Sequence[str],
    lim: CommandLimits,
    copies: Sequence[tuple[str, str]],
    result_file: str | None,
    result_bytes: int,
) -> list[str]:
    blocks = str(lim.max_file_mb * 2048)  # ulimit -f counts 512-byte blocks
    kib = str(lim.memory_mb * 1024)
    pairs = [p for pair in copies for p in pair]
    head = [blocks, str(lim.max_open_files), kib, result_file or "", str(result_bytes)]
    return ["/bin/sh", "-c", _GO, "sh", *head, str(len(copies)), *pairs, *argv]


def _give_to_nobody(top: Path) -> None:
    """Hand a writable mount to the sandbox's uid (without following symlinks)."""
    os.chown(top, NOBODY, NOBODY, follow_symlinks=False)
    for dirpath, dirnames, filenames in os.walk(top):
        for name in (*dirnames, *filenames):
            os.chown(os.path.join(dirpath, name), NOBODY, NOBODY, follow_symlinks=False)


def _kill_all(cgroup: CgroupTree) -> None:
    """SIGKILL whatever is still in the cgroup (a process that left the sandbox's tree)."""
    for _ in range(3):
        pids = []
        for d in cgroup.dirs:
            with contextlib.suppress(OSError, ValueError):
                pids += [int(p) for p in (d / "cgroup.procs").read_text().split()]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def _head(fh: IO[bytes], limit: int) -> str:
    fh.seek(0)
    data = fh.read(limit + 1)
    text = data[:limit].decode("utf-8", "replace")
    return text + ("\n[output truncated]" if len(data) > limit else "")
