# ruff: noqa
"""Promise: a candidate cannot forge the grader's results or read other jobs.

Attack (aimed at how this sandbox is built): the processes that serve the
grader sit in the same PID namespace and user namespace, with the same uid,
and hold the job pipe (fd 0), the reply pipe (fd 1) and the worker's stderr
(fd 2). Having read the source, the candidate tries every way to reach them,
for every other process it can see (PID 1, its parent, anything else):

* ``/proc/<pid>/fd/<n>`` opened for reading and for writing;
* ``pidfd_open`` + ``pidfd_getfd`` (duplicates a descriptor of another process);
* ``ptrace`` attach and seize, ``process_vm_readv`` / ``process_vm_writev``,
  ``/proc/<pid>/mem``;
* the x32 system-call ABI (``nr | 0x40000000``), which a filter written for
  x86_64 alone would not see.

Every channel it gets is used at once: it writes a forged reply frame (all
cases ``returned`` with the candidate's chosen value) into every writable
descriptor, which would make this wrong candidate, or the next candidate on
the worker, be judged by the forgery.

Expected: ``f`` returns ``[]`` (no channel opened); the honest candidate that
follows on the same worker is graded correctly.
"""

import ctypes
import json
import os
import struct

_SYS = {
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "pidfd_open": 434,
    "pidfd_getfd": 438,
}


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _forged(n):
    reply = {
        "obs": [{"status": "returned", "value": 2, "duration_s": 0.0}] * n,
        "stdout": "",
        "stderr": "",
        "untimed": False,
        "recycle": False,
    }
    data = json.dumps(reply).encode()
    done = json.dumps({"done": True, "clean": True}).encode()
    return struct.pack(">I", len(data)) + data + struct.pack(">I", len(done)) + done


def f(x, n_cases=2):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    got = []
    forged = _forged(n_cases)
    me = os.getpid()
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) != me]
    for pid in pids:
        for n in range(0, 12):
            for mode in (os.O_WRONLY, os.O_RDONLY):
                try:
                    fd = os.open(f"/proc/{pid}/fd/{n}", mode | os.O_NONBLOCK)
                except OSError:
                    continue
                got.append(f"/proc/{pid}/fd/{n} mode {mode}")
                try:
                    os.write(fd, forged)
                except OSError:
                    pass
                os.close(fd)
        pidfd = libc.syscall(_SYS["pidfd_open"], ctypes.c_long(pid), 0)
        if pidfd >= 0:
            got.append(f"pidfd_open({pid})")
            for n in range(0, 12):
                fd = libc.syscall(_SYS["pidfd_getfd"], ctypes.c_long(pidfd), ctypes.c_long(n), 0)
                if fd >= 0:
                    got.append(f"pidfd_getfd({pid}, {n})")
                    try:
                        os.write(fd, forged)
                    except OSError:
                        pass
                    os.close(fd)
            os.close(pidfd)
        for req in (16, 0x4206):  # PTRACE_ATTACH, PTRACE_SEIZE
            if libc.syscall(_SYS["ptrace"], ctypes.c_long(req), ctypes.c_long(pid), 0, 0) == 0:
                got.append(f"ptrace({req}, {pid})")
                libc.syscall(_SYS["ptrace"], ctypes.c_long(17), ctypes.c_long(pid), 0, 0)
        # Forked from the same image: our addresses are (mostly) theirs too.
        buf = ctypes.create_string_buffer(64)
        local = _IoVec(ctypes.cast(buf, ctypes.c_void_p), 64)
        remote = _IoVec(id(forged), 64)
        for name in ("process_vm_readv", "process_vm_writev"):
            r = libc.syscall(
                _SYS[name], ctypes.c_long(pid), ctypes.byref(local), 1, ctypes.byref(remote), 1, 0
            )
            if r > 0:
                got.append(f"{name}({pid})")
        for path in (f"/proc/{pid}/mem", f"/proc/{pid}/environ"):
            try:
                with open(path, "rb"):
                    got.append(path)
            except OSError:
                pass
    return got


def x32(x):
    """The same ptrace attach on PID 1 through the x32 ABI (on x86_64 only)."""
    if os.uname().machine != "x86_64":
        return []
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    r = libc.syscall(ctypes.c_long(0x40000000 | 101), ctypes.c_long(16), ctypes.c_long(1), 0, 0)
    return ["x32 ptrace attach"] if r == 0 else []
