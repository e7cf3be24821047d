# ruff: noqa
"""Promise: a candidate cannot exhaust the host's memory.

Attack: the per-process address-space limit does not bound a process tree:
fork ``n`` children that each fill ``mb`` MiB (pages written), hold it for a
moment, and exit. The processes carry the marker so the host can add up their
resident memory.

Expected: the tree's total resident memory stays within the candidate's
memory limit (with some slack), whatever the candidate's outcome.
"""

import ctypes
import os
import time


def _name(marker):
    """Rename the calling thread (prctl PR_SET_NAME), so the host can find it."""
    if ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_NAME) failed")


def f(n, mb, marker):
    _name(marker)
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            try:
                block = bytearray(b"x") * (mb << 20)
                time.sleep(1.5)
            finally:
                os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)
    return "done"
