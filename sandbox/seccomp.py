"""The seccomp filter every process in a bubblewrap sandbox runs under.

Built on the host with libseccomp (through ``pyseccomp``) and handed to
bubblewrap as a compiled BPF program (``--seccomp FD``), so it is in place
before the first instruction of the harness runs and holds even if a
candidate gets past the harness. It allows everything except the calls below,
which fail with ``EPERM``:

* reaching into another process: ``ptrace``, ``process_vm_readv``/``writev``,
  ``pidfd_open``/``pidfd_getfd``/``pidfd_send_signal``, ``kcmp``,
  ``process_madvise``;
* kernel state that outlives a process: ``keyctl``, ``add_key``,
  ``request_key`` (keyrings), System V IPC (``shmget``, ``msgget``,
  ``semget``), POSIX message queues (``mq_open``);
* large kernel attack surface no grading needs: ``perf_event_open``, ``bpf``,
  ``userfaultfd``, ``io_uring_*``, namespaces and mounts (``unshare``,
  ``setns``, ``mount`` and the new mount API, ``pivot_root``, ``chroot``),
  handles (``open_by_handle_at``), modules, ``kexec``, ``reboot``, ``swapon``,
  ``acct``, ``quotactl``, ``syslog``, ``iopl``/``ioperm``, ``personality``.

The calls that change another process's limits or scheduling are refused unless
they name the caller itself (``EPERM`` for any other target): ``prlimit64``,
``setpriority`` (``PRIO_PROCESS`` and who 0 only), ``sched_setscheduler``,
``sched_setparam``, ``sched_setattr``, ``sched_setaffinity``, ``ioprio_set``
(``IOPRIO_WHO_PROCESS`` and who 0 only), ``migrate_pages``, ``move_pages``. A
candidate shares its uid with init and the supervisor, which outlive it: without
this it could lower their limits, nice them to 19 or make them ``SCHED_IDLE``,
and every later candidate on that worker would pay (a starved supervisor's
clock turns answers into timeouts).

System calls of any other architecture (the 32-bit and x32 ABIs on x86_64)
kill the process: a filter for one ABI says nothing about the others.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import tempfile
import threading
from collections.abc import Iterator

from sandbox.errors import IsolationUnavailable

__all__ = ["DENIED", "SELF_ONLY", "compile_filter"]

DENIED: tuple[str, ...] = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "pidfd_open",
    "pidfd_getfd",
    "pidfd_send_signal",
    "kcmp",
    "process_madvise",
    "keyctl",
    "add_key",
    "request_key",
    "shmget",
    "msgget",
    "semget",
    "mq_open",
    "perf_event_open",
    "bpf",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "pivot_root",
    "chroot",
    "open_by_handle_at",
    "name_to_handle_at",
    "init_module",
    "finit_module",
    "delete_module",
    "kexec_load",
    "kexec_file_load",
    "reboot",
    "swapon",
    "swapoff",
    "acct",
    "quotactl",
    "syslog",
    "iopl",
    "ioperm",
    "personality",
)
"""System calls refused with ``EPERM`` (names unknown to this libseccomp are skipped)."""

SELF_ONLY: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("prlimit64", (0,)),
    ("setpriority", (0, 1)),  # which (PRIO_PROCESS is 0), who
    ("sched_setscheduler", (0,)),
    ("sched_setparam", (0,)),
    ("sched_setattr", (0,)),
    ("sched_setaffinity", (0,)),
    ("ioprio_set", (1,)),  # who; which is checked below (IOPRIO_WHO_PROCESS is 1)
    ("migrate_pages", (0,)),
    ("move_pages", (0,)),
)
"""Calls refused with ``EPERM`` when any listed argument is not 0 (not the caller)."""

_HINT = (
    "the sandbox needs libseccomp (Debian/Ubuntu: `apt-get install -y libseccomp2`) and the "
    "pyseccomp package"
)


#: Sonames tried before ``ctypes.util.find_library``, which runs ``ldconfig -p`` (and
#: more programs when that fails) on every call: two processes per start-up otherwise.
_SONAMES = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}
_LOADER_LOCK = threading.Lock()


@contextlib.contextmanager
def _sonames_first() -> Iterator[None]:
    """While ``pyseccomp`` loads, resolve its two libraries by soname without a process.

    ``pyseccomp`` looks both up with ``ctypes.util.find_library`` at import. A name that
    the dynamic loader opens by its soname is answered with it; anything else (another
    name, a soname missing here) goes to the original lookup, so a caller in another
    thread meanwhile gets an answer just as loadable.
    """
    original = ctypes.util.find_library

    def find_library(name: str) -> str | None:
        soname = _SONAMES.get(name)
        if soname is not None:
            try:
                ctypes.CDLL(soname)
            except OSError:
                pass
            else:
                return soname
        return original(name)

    with _LOADER_LOCK:
        ctypes.util.find_library = find_library
        try:
            yield
        finally:
            ctypes.util.find_library = original


def compile_filter() -> bytes:
    """Return the filter as a BPF program for the running architecture.

    Raises:
        IsolationUnavailable: libseccomp is missing or refuses the filter.
    """
    try:
        with _sonames_first():
            import pyseccomp as sc  # noqa: PLC0415 - loads libseccomp; only bwrap needs it
    except (ImportError, OSError, RuntimeError) as exc:  # RuntimeError: no libseccomp
        raise IsolationUnavailable(f"cannot build the seccomp filter: {exc}; {_HINT}") from exc
    try:
        filt = sc.SyscallFilter(sc.ALLOW)
        filt.set_attr(sc.Attr.ACT_BADARCH, sc.KILL_PROCESS)
        for name in DENIED:
            try:
                filt.add_rule(sc.ERRNO(errno.EPERM), name)
            except (ValueError, OSError):
                continue  # a call this architecture or libseccomp does not have
        for name, args in SELF_ONLY:
            try:
                for index in args:
                    filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(index, sc.NE, 0))
                if name == "ioprio_set":
                    filt.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.NE, 1))
            except (ValueError, OSError):
                continue
        with tempfile.TemporaryFile() as fh:
            filt.export_bpf(fh)
            fh.seek(0)
            program = fh.read()
    except (OSError, RuntimeError) as exc:
        raise IsolationUnavailable(f"cannot build the seccomp filter: {exc}; {_HINT}") from exc
    if not program or len(program) % 8:
        raise IsolationUnavailable(f"libseccomp produced no usable filter; {_HINT}")
    return program
