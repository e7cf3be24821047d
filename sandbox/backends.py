"""Isolation backends: how a sandbox worker process is started.

A backend turns "start the zygote" into an argv, an environment and a uid.
Two exist:

* ``bwrap`` (default on Linux): bubblewrap namespaces (user, PID, network,
  IPC, UTS, cgroup, mount), an unprivileged uid with no capabilities and no
  new privileges, a read-only ``/usr`` and ``/dev``, private tmpfs
  ``/scratch``, ``/tmp`` and ``/dev/shm`` of capped size, an empty
  environment, no further user namespaces, the seccomp filter of
  :mod:`sandbox.seccomp`, and the harness itself as PID 1 (``--as-pid-1``: no
  bubblewrap init inside the sandbox holding the grader's pipes). When the
  grader runs as root the worker is started as the unprivileged host uid
  ``nobody`` as well, so even an escape from the mount namespace lands with
  no rights.
* ``none``: the same zygote as a plain child process. **No isolation**: for
  trusted local use only (a candidate can read your files and your network).

Backends never fall back to each other: ``auto`` means ``bwrap`` or a refusal.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.cgroups import _children
from sandbox.errors import IsolationUnavailable
from sandbox.seccomp import compile_filter
from sandbox.types import Limits

__all__ = [
    "BACKENDS",
    "SECCOMP_FD",
    "Backend",
    "Interpreter",
    "Launch",
    "filter_pipe",
    "find_python",
    "get_backend",
    "locate_python",
    "supported_version",
    "system_python",
]

HARNESS_DIR = Path(__file__).resolve().parent / "child"
NOBODY = 65534
SECCOMP_FD = "{seccomp-fd}"
"""Placeholder in a launch's ``argv`` for the descriptor that carries the filter."""
_SANDBOX_ENV = {
    "HOME": "/scratch",
    "PATH": "/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONHASHSEED": "0",
}
_INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install -y bubblewrap`; Fedora: "
    "`dnf install bubblewrap`), or pass `--isolation none` to run candidates WITHOUT "
    "isolation on a machine you trust"
)


@dataclass(frozen=True, slots=True)
class Launch:
    """How to start one worker process."""

    argv: list[str]
    """Command line, no shell."""
    env: dict[str, str]
    """The complete environment of the worker (nothing inherited)."""
    user: int | None = None
    """Host uid (and gid) to start as, or ``None`` for the grader's own."""
    cwd: str | None = None
    """Working directory on the host (``none`` backend only)."""
    cleanup: list[str] = field(default_factory=list)
    """Host directories to delete when the worker ends."""
    seccomp: bytes | None = None
    """A compiled BPF filter, handed to the worker on a pipe whose descriptor
    number replaces :data:`SECCOMP_FD` in ``argv``."""
    wrapped: bool = False
    """``argv`` starts a wrapper (bubblewrap) whose one child is the zygote. The
    zygote is killed first, so that the wrapper reaps it and exits: killed
    together, the zygote outlived the wrapper and was left to the host's init,
    a zombie wherever that init does not reap (a container's PID 1 often)."""

    def command(self, fd: int | None) -> list[str]:
        """``argv`` with the filter's descriptor number filled in."""
        return [str(fd) if a == SECCOMP_FD else a for a in self.argv]


def filter_pipe(program: bytes) -> int:
    """A pipe's read end holding ``program`` (the caller closes it after the spawn)."""
    r, w = os.pipe()
    try:
        os.write(w, program)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(w)
    return r


class Backend:
    """Base of the isolation backends; see the module docstring."""

    name = "base"
    isolated = True

    def check_tools(self) -> None:
        """Raise :class:`IsolationUnavailable` when a tool this backend needs is missing."""

    def check_available(self, python: str) -> None:
        """Raise :class:`IsolationUnavailable` when this backend cannot run here."""

    def use(self, python: Interpreter) -> None:
        """Take what :func:`locate_python` found, so launches need not probe it again."""

    def launch(self, python: str, limits: Limits) -> Launch:
        """Describe how to start one worker."""
        raise NotImplementedError


class BwrapBackend(Backend):
    """Linux namespaces through bubblewrap; see the module docstring."""

    name = "bwrap"

    def __init__(self) -> None:
        self._prefixes: dict[str, str] = {}
        self._filter: bytes | None = None

    def use(self, python: Interpreter) -> None:
        """Remember the interpreter's prefix (else the first launch asks it)."""
        self._prefixes[python.path] = python.prefix

    def check_tools(self) -> None:
        """Raise when bwrap is not installed or the seccomp filter cannot be built."""
        if shutil.which("bwrap") is None:
            raise IsolationUnavailable(
                f"isolation 'bwrap': bwrap is not installed; {_INSTALL_HINT}"
            )
        if self._filter is None:
            self._filter = compile_filter()

    def check_available(self, python: str) -> None:
        """Raise when bwrap is missing or cannot create namespaces here."""
        self.check_tools()
        launch = self.launch(python, Limits())
        probe = [*launch.argv[: launch.argv.index(python)], "/usr/bin/true"]
        fd = filter_pipe(launch.seccomp or b"")
        probe = [str(fd) if a == SECCOMP_FD else a for a in probe]
        try:
            proc = subprocess.run(
                probe,
                pass_fds=(fd,),
                env=launch.env,
                capture_output=True,
                timeout=20,
                check=False,
                user=launch.user,
                group=launch.user,
                extra_groups=[] if launch.user is not None else None,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise IsolationUnavailable(f"isolation 'bwrap': could not start bwrap: {exc}") from exc
        finally:
            os.close(fd)
        if proc.returncode != 0:
            why = proc.stderr.decode("utf-8", "replace").strip()[:500]
            raise IsolationUnavailable(
                f"isolation 'bwrap': bwrap cannot create its namespaces here ({why}). "
                "Unprivileged user namespaces must be enabled (sysctl "
                "kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0; inside a "
                "container, allow them or run the container with its own seccomp profile)"
            )

    def launch(self, python: str, limits: Limits) -> Launch:
        """Build the bwrap command line for one worker."""
        size = str(limits.scratch_mb * 1024 * 1024)
        argv = [
            "bwrap",
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--uid",
            str(NOBODY),
            "--gid",
            str(NOBODY),
            "--die-with-parent",
            "--new-session",
            "--as-pid-1",
            "--cap-drop",
            "ALL",
            "--hostname",
            "sandbox",
            "--clearenv",
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            if os.path.islink(top):
                argv += ["--symlink", os.readlink(top), top]
            elif os.path.isdir(top):
                argv += ["--ro-bind", top, top]
        prefix = self._prefixes.get(python) or self._prefixes.setdefault(python, _prefix_of(python))
        if prefix != "/usr" and not prefix.startswith("/usr/"):
            argv += ["--ro-bind", prefix, prefix]
        argv += [
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--size",
            size,
            "--tmpfs",
            "/tmp",  # noqa: S108 - a private tmpfs inside the sandbox
            "--size",
            size,
            "--tmpfs",
            "/dev/shm",  # noqa: S108 - a private tmpfs inside the sandbox
            "--remount-ro",
            "/dev",
            "--size",
            size,
            "--tmpfs",
            "/scratch",
            "--ro-bind",
            str(HARNESS_DIR),
            "/gradebox",
            "--remount-ro",
            "/",
        ]
        for key, value in _SANDBOX_ENV.items():
            argv += ["--setenv", key, value]
        if self._filter is None:
            self._filter = compile_filter()
        argv += ["--seccomp", SECCOMP_FD, "--chdir", "/scratch"]
        argv += [python, "-I", "-S", "-B", *_harness("/gradebox"), "--pidns"]
        return Launch(
            argv=argv,
            env=dict(_SANDBOX_ENV),
            user=NOBODY if os.geteuid() == 0 else None,
            seccomp=self._filter,
            wrapped=True,
        )


class NoneBackend(Backend):
    """No isolation at all: for trusted local use only."""

    name = "none"
    isolated = False

    def launch(self, python: str, limits: Limits) -> Launch:
        """Start the zygote as a plain child in a fresh host temp dir."""
        scratch = tempfile.mkdtemp(prefix="gradebox-none-")
        env = dict(_SANDBOX_ENV, HOME=scratch)
        argv = [python, "-I", "-S", "-B", *_harness(str(HARNESS_DIR))]
        return Launch(argv=argv, env=env, cwd=scratch, cleanup=[scratch])


def _harness(folder: str) -> list[str]:
    """The interpreter's arguments that run the harness in ``folder``.

    Imported, not run as a script: a script is compiled at every start (~9 ms of
    each worker's), a module loads its bytecode when there is any. The script's
    path stays on the command line, where the self-check finds it on PID 1.
    """
    boot = f"import sys; sys.path.insert(0, {folder!r}); import harness; harness.main()"
    return ["-c", boot, f"{folder}/harness.py"]


BACKENDS: dict[str, type[Backend]] = {"bwrap": BwrapBackend, "none": NoneBackend}


def get_backend(name: str) -> Backend:
    """Return the backend called ``name`` (``auto`` picks the strong default)."""
    if name == "auto":
        name = "bwrap"
    if name not in BACKENDS:
        raise IsolationUnavailable(
            f"unknown isolation {name!r}; choose one of: auto, {', '.join(BACKENDS)}"
        )
    return BACKENDS[name]()


@dataclass(frozen=True, slots=True)
class Interpreter:
    """The interpreter that runs candidates, as one probe of it found."""

    path: str
    """Its real path."""
    prefix: str
    """Its ``sys.base_prefix`` (what the bwrap backend mounts when outside ``/usr``)."""


#: One start of the interpreter says both whether it will do and where it lives.
_PROBE = "import sys; print(sys.version_info >= (3, 11)); print(sys.base_prefix)"


def locate_python(explicit: str | None = None) -> Interpreter:
    """The interpreter that runs candidates (3.11 or newer) and its prefix.

    A system interpreter under ``/usr`` is preferred: it is readable by an
    unprivileged uid and starts without version-manager shims or ``.pth`` files.

    Raises:
        IsolationUnavailable: No interpreter there (or at ``explicit``) is 3.11 or newer.
    """
    options = (
        [explicit]
        if explicit
        else [
            "/usr/bin/python3",
            "/usr/local/bin/python3",
            shutil.which("python3") or "",
        ]
    )
    for cand in options:
        if not cand or not os.path.exists(cand):
            continue
        real = os.path.realpath(cand)
        try:
            out = subprocess.run(
                [real, "-I", "-S", "-c", _PROBE],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = out.stdout.splitlines()
        if lines and lines[0].strip() == "True":
            prefix = lines[1].strip() if len(lines) > 1 else ""
            return Interpreter(real, prefix or "/usr")
    raise IsolationUnavailable(
        "no Python 3.11+ interpreter found to run candidates"
        + (f" at {explicit}" if explicit else " (looked for /usr/bin/python3)")
        + "; install one (`apt-get install -y python3`) or pass --sandbox-python PATH"
    )


def system_python(explicit: str | None = None) -> Interpreter | None:
    """The interpreter that runs candidates when it can be taken without running it.

    That is ``explicit`` (default ``/usr/bin/python3``) when its real path lies
    under ``/usr``, which every sandbox mounts: its prefix is assumed to be
    ``/usr`` (nothing more to mount). Nothing is started, so the caller must
    check what a worker reports (:func:`supported_version`) and fall back to
    :func:`locate_python` when no worker starts on it or its version will not do.
    ``None`` when the interpreter must be probed.
    """
    cand = explicit or "/usr/bin/python3"
    real = os.path.realpath(cand)
    if not real.startswith("/usr/") or not os.path.isfile(real) or not os.access(real, os.X_OK):
        return None
    return Interpreter(real, "/usr")


def supported_version(version: str | None) -> bool:
    """Whether a ``sys.version`` string (as a worker reports it) is 3.11 or newer."""
    parts = (version or "").split(" ", 1)[0].split(".")
    try:
        return (int(parts[0]), int(parts[1])) >= (3, 11)
    except (ValueError, IndexError):
        return False


def find_python(explicit: str | None = None) -> str:
    """The real path of the interpreter that runs candidates: :func:`locate_python`'s."""
    return locate_python(explicit).path


def _prefix_of(python: str) -> str:
    out = subprocess.run(
        [python, "-I", "-S", "-c", "import sys; print(sys.base_prefix)"],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    return out.stdout.strip() or "/usr"


def stop_worker_process(proc: subprocess.Popen[bytes], wrapped: bool) -> None:
    """SIGKILL a worker: a wrapper's one child alone when it has one, else the whole group.

    The wrapper then reaps its child and exits; the caller reaps the wrapper.
    """
    if wrapped and _kill_only_child(proc.pid):
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _kill_only_child(parent: int) -> bool:
    """SIGKILL the one child of ``parent``; whether it was sent.

    Through a pidfd, checked to be the child after it was opened: a pid read
    from ``/proc`` may be reaped and reused before the signal, a pidfd may not.
    """
    kids = _children(parent)
    if len(kids) != 1:
        return False
    try:
        pidfd = os.pidfd_open(kids[0])
    except OSError:
        return False
    try:
        if _children(parent) != kids:  # reaped (and maybe reused) before the open
            return False
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    except OSError:
        return False
    finally:
        os.close(pidfd)
    return True
