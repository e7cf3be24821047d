# ruff: noqa
"""Promise: a candidate cannot leave anything behind for a later candidate.

Attack: ``plant(kind, marker)`` leaves one kind of residue; a later candidate on
the same warm worker runs ``look(kind, marker)`` to find it:

* ``tmp_file``, ``dev_shm_file``, ``scratch_file``, ``home_file``: a file.
* ``posix_shm``: ``multiprocessing.shared_memory`` with the resource tracker
  told to forget it (so nothing unlinks it at exit).
* ``posix_semaphore``: a named POSIX semaphore (``sem_open``).
* ``posix_mqueue``: a POSIX message queue with a message in it (``mq_open``).
* ``sysv_shm``: a System V shared-memory segment (``shmget``).
* ``user_keyring``: a key in the kernel's per-user keyring (``add_key``).
* ``persistent_keyring``: a key in the user namespace's persistent keyring
  (``keyctl(KEYCTL_GET_PERSISTENT)``), which outlives every process.
* ``dev_file``: a file in ``/dev`` (bubblewrap's ``/dev`` is a tmpfs the
  harness never wiped).
* ``background_process``: a ``setsid`` daemon (self-ending after 20 s) with
  the marker on its command line, also listening on an abstract Unix socket.
* ``locked_dir``: a tree of files under a directory made ``chmod 000``.
* ``deep_tree``: directories nested 1500 deep in the scratch dir.

``plant`` returns ``"planted"`` when it worked; ``look`` returns what it found.

Expected: planting works (``"planted"``), grading it is not an
``infra_error``, and ``look`` finds nothing.
"""

import ctypes
import os
import socket
import sys
import zlib

_IPC_CREAT = 0o1000
_KEY_SPEC_USER_KEYRING = -4
_SYS_ADD_KEY, _SYS_REQUEST_KEY, _SYS_KEYCTL = 248, 249, 250  # x86_64
_KEYCTL_READ = 11
_KEYCTL_GET_PERSISTENT = 22
_KEYCTL_SEARCH = 10

_DAEMON = r"""
import socket, sys, time
s = socket.socket(socket.AF_UNIX)
s.bind("\0" + sys.argv[1])
s.listen(1)
time.sleep(20)
"""


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def _key(marker):
    return zlib.crc32(marker.encode()) & 0x7FFFFFFF


class _MqAttr(ctypes.Structure):
    _fields_ = [
        ("flags", ctypes.c_long),
        ("maxmsg", ctypes.c_long),
        ("msgsize", ctypes.c_long),
        ("curmsgs", ctypes.c_long),
        ("pad", ctypes.c_long * 4),
    ]


def _files(kind, marker):
    return {
        "tmp_file": [f"/tmp/{marker}"],
        "dev_shm_file": [f"/dev/shm/{marker}"],
        "scratch_file": [
            os.path.join(os.getcwd(), marker),
            os.path.join(os.getcwd(), "sub", marker),
        ],
        "home_file": [os.path.join(os.path.expanduser("~"), "." + marker)],
        "locked_dir": [os.path.join(os.getcwd(), "locked-" + marker)],
    }[kind]


def plant(kind, marker):
    libc = _libc()
    if kind in ("tmp_file", "dev_shm_file", "scratch_file", "home_file"):
        for path in _files(kind, marker):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(marker)
    elif kind == "locked_dir":
        top = _files(kind, marker)[0]
        os.makedirs(os.path.join(top, "inner"))
        with open(os.path.join(top, "inner", "f"), "w") as fh:
            fh.write(marker)
        os.chmod(os.path.join(top, "inner"), 0)
        os.chmod(top, 0)
    elif kind == "deep_tree":
        here = os.getcwd()
        os.mkdir("deep-" + marker)
        os.chdir("deep-" + marker)
        for _ in range(1500):
            os.mkdir("d")
            os.chdir("d")
        os.chdir(here)
    elif kind == "posix_shm":
        from multiprocessing import resource_tracker, shared_memory

        shm = shared_memory.SharedMemory(name=marker, create=True, size=4096)
        shm.buf[: len(marker)] = marker.encode()
        resource_tracker.unregister(shm._name, "shared_memory")
        shm.close()
    elif kind == "posix_semaphore":
        libc.sem_open.restype = ctypes.c_void_p
        if not libc.sem_open(("/" + marker).encode(), os.O_CREAT, 0o600, 1):
            return f"sem_open failed: errno {ctypes.get_errno()}"
    elif kind == "posix_mqueue":
        attr = _MqAttr(0, 4, 64, 0)
        q = libc.mq_open(("/" + marker).encode(), os.O_CREAT | os.O_RDWR, 0o600, ctypes.byref(attr))
        if q < 0:
            return f"mq_open failed: errno {ctypes.get_errno()}"
        libc.mq_send(q, marker.encode(), len(marker), 0)
    elif kind == "sysv_shm":
        if libc.shmget(_key(marker), 4096, _IPC_CREAT | 0o600) < 0:
            return f"shmget failed: errno {ctypes.get_errno()}"
    elif kind == "user_keyring":
        payload = marker.encode()
        kid = libc.syscall(
            _SYS_ADD_KEY,
            b"user",
            marker.encode(),
            payload,
            len(payload),
            ctypes.c_long(_KEY_SPEC_USER_KEYRING),
        )
        if kid < 0:
            return f"add_key failed: errno {ctypes.get_errno()}"
    elif kind == "persistent_keyring":
        ring = libc.syscall(
            _SYS_KEYCTL, _KEYCTL_GET_PERSISTENT, ctypes.c_long(-1), ctypes.c_long(-4)
        )
        if ring < 0:
            return f"keyctl failed: errno {ctypes.get_errno()}"
        payload = marker.encode()
        kid = libc.syscall(
            _SYS_ADD_KEY, b"user", marker.encode(), payload, len(payload), ctypes.c_long(ring)
        )
        if kid < 0:
            return f"add_key failed: errno {ctypes.get_errno()}"
    elif kind == "dev_file":
        try:
            with open("/dev/" + marker, "w") as fh:
                fh.write(marker)
        except OSError as exc:
            return f"open failed: errno {exc.errno}"
    elif kind == "background_process":
        if os.fork() == 0:
            try:
                os.setsid()
                if os.fork() == 0:
                    os.execv(sys.executable, [sys.executable, "-c", _DAEMON, marker])
            finally:
                os._exit(0)
        os.wait()
        import time

        time.sleep(0.3)  # let it bind
    else:
        return f"unknown kind {kind}"
    return "planted"


def look(kind, marker):
    libc = _libc()
    found = []
    if kind in ("tmp_file", "dev_shm_file", "scratch_file", "home_file", "locked_dir"):
        found += [p for p in _files(kind, marker) if os.path.lexists(p)]
    for d in (os.getcwd(), "/tmp", "/dev/shm", os.path.expanduser("~")):
        try:
            found += [os.path.join(d, n) for n in os.listdir(d) if marker in n]
        except OSError:
            pass
    if kind == "posix_shm":
        try:
            from multiprocessing import resource_tracker, shared_memory

            shm = shared_memory.SharedMemory(name=marker)
            found.append("shared memory: " + bytes(shm.buf[:40]).decode("ascii", "replace"))
            resource_tracker.unregister(shm._name, "shared_memory")
            shm.close()
        except OSError:
            pass
    if kind == "posix_semaphore":
        libc.sem_open.restype = ctypes.c_void_p
        if libc.sem_open(("/" + marker).encode(), 0):
            found.append("semaphore")
    if kind == "posix_mqueue":
        q = libc.mq_open(("/" + marker).encode(), os.O_RDONLY | os.O_NONBLOCK)
        if q >= 0:
            buf = ctypes.create_string_buffer(64)
            n = libc.mq_receive(q, buf, 64, None)
            found.append("message queue: " + buf.raw[: max(n, 0)].decode("ascii", "replace"))
    if kind == "sysv_shm":
        if libc.shmget(_key(marker), 0, 0) >= 0:
            found.append("sysv shm segment")
    if kind == "user_keyring":
        kid = libc.syscall(_SYS_REQUEST_KEY, b"user", marker.encode(), None, ctypes.c_long(0))
        if kid > 0:
            buf = ctypes.create_string_buffer(64)
            n = libc.syscall(_SYS_KEYCTL, _KEYCTL_READ, ctypes.c_long(kid), buf, 64)
            found.append("key: " + buf.raw[: max(n, 0)].decode("ascii", "replace"))
    if kind == "persistent_keyring":
        ring = libc.syscall(
            _SYS_KEYCTL, _KEYCTL_GET_PERSISTENT, ctypes.c_long(-1), ctypes.c_long(-4)
        )
        if ring > 0:
            kid = libc.syscall(
                _SYS_KEYCTL, _KEYCTL_SEARCH, ctypes.c_long(ring), b"user", marker.encode(), 0
            )
            if kid > 0:
                found.append("persistent key")
    if kind == "dev_file" and os.path.lexists("/dev/" + marker):
        found.append("/dev/" + marker)
    if kind == "background_process":
        for pid in (p for p in os.listdir("/proc") if p.isdigit()):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(f"process {pid}")
            except OSError:
                pass
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect("\0" + marker)
            found.append("abstract socket answers")
        except OSError:
            pass
        finally:
            s.close()
    return found
