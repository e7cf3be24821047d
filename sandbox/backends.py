"""Isolation backends: how a sandbox worker process is started.

A backend turns "start the zygote" into an argv, an environment and a uid.
Two exist:

* ``bwrap`` (default on Linux): bubblewrap namespaces (user, PID, network,
  IPC, UTS, cgroup, mount), an unprivileged uid with no capabilities and no
  new privileges, a read-only ``/usr``, private tmpfs ``/scratch``, ``/tmp``
  and ``/dev/shm`` of capped size, an empty environment, no further user
  namespaces. When the grader runs as root the worker is started as the
  unprivileged host uid ``nobody`` as well, so even an escape from the mount
  namespace lands with no rights.
* ``none``: the same zygote as a plain child process. **No isolation**: for
  trusted local use only (a candidate can read your files and your network).

Backends never fall back to each other: ``auto`` means ``bwrap`` or a refusal.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from sandbox.errors import IsolationUnavailable
from sandbox.types import Limits

__all__ = ["BACKENDS", "Backend", "Launch", "find_python", "get_backend"]

HARNESS_DIR = Path(__file__).resolve().parent / "child"
NOBODY = 65534
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


class Backend:
    """Base of the isolation backends; see the module docstring."""

    name = "base"
    isolated = True

    def check_tools(self) -> None:
        """Raise :class:`IsolationUnavailable` when a tool this backend needs is missing."""

    def check_available(self, python: str) -> None:
        """Raise :class:`IsolationUnavailable` when this backend cannot run here."""

    def launch(self, python: str, limits: Limits) -> Launch:
        """Describe how to start one worker."""
        raise NotImplementedError


class BwrapBackend(Backend):
    """Linux namespaces through bubblewrap; see the module docstring."""

    name = "bwrap"

    def __init__(self) -> None:
        self._prefixes: dict[str, str] = {}

    def check_tools(self) -> None:
        """Raise when bwrap is not installed."""
        if shutil.which("bwrap") is None:
            raise IsolationUnavailable(
                f"isolation 'bwrap': bwrap is not installed; {_INSTALL_HINT}"
            )

    def check_available(self, python: str) -> None:
        """Raise when bwrap is missing or cannot create namespaces here."""
        self.check_tools()
        launch = self.launch(python, Limits())
        probe = [*launch.argv[: launch.argv.index(python)], "/usr/bin/true"]
        try:
            proc = subprocess.run(
                probe,
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
        argv += ["--chdir", "/scratch", python, "-I", "-S", "-B", "/gradebox/harness.py", "--pidns"]
        return Launch(argv=argv, env=dict(_SANDBOX_ENV), user=NOBODY if os.geteuid() == 0 else None)


class NoneBackend(Backend):
    """No isolation at all: for trusted local use only."""

    name = "none"
    isolated = False

    def launch(self, python: str, limits: Limits) -> Launch:
        """Start the zygote as a plain child in a fresh host temp dir."""
        scratch = tempfile.mkdtemp(prefix="gradebox-none-")
        env = dict(_SANDBOX_ENV, HOME=scratch)
        argv = [python, "-I", "-S", "-B", str(HARNESS_DIR / "harness.py")]
        return Launch(argv=argv, env=env, cwd=scratch, cleanup=[scratch])


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


def find_python(explicit: str | None = None) -> str:
    """The real path of the interpreter that runs candidates (3.11 or newer).

    A system interpreter under ``/usr`` is preferred: it is readable by an
    unprivileged uid and starts without version-manager shims or ``.pth`` files.
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
                [real, "-I", "-S", "-c", "import sys; print(sys.version_info >= (3, 11))"],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.stdout.strip() == "True":
            return real
    raise IsolationUnavailable(
        "no Python 3.11+ interpreter found to run candidates"
        + (f" at {explicit}" if explicit else " (looked for /usr/bin/python3)")
        + "; install one (`apt-get install -y python3`) or pass --sandbox-python PATH"
    )


def _prefix_of(python: str) -> str:
    out = subprocess.run(
        [python, "-I", "-S", "-c", "import sys; print(sys.base_prefix)"],
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
    )
    return out.stdout.strip() or "/usr"
