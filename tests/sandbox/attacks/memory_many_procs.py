# ruff: noqa
"""Promise: a candidate cannot exhaust the host's memory.

Attack: the per-process address-space limit does not bound a process tree:
fork ``n`` children that each fill ``mb`` MiB (pages written), hold it for a
moment, and exit. The processes carry the marker so the host can add up their
resident memory.

Expected: the tree's total resident memory stays within the candidate's
memory limit (with some slack), whatever the candidate's outcome.
"""
import os
import time


def f(n, mb, marker):
    with open("/proc/self/comm", "w") as fh:
        fh.write(marker)
    kids = []
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            try:
                block = bytearray(b"x") * (mb << 20)
                time.sleep(1.0)
            finally:
                os._exit(0)
        kids.append(pid)
    for pid in kids:
        os.waitpid(pid, 0)
    return "done"
