# ruff: noqa
"""Promise: a candidate's child processes cannot outlive it.

Attack: a child in the candidate's own process group that ignores SIGTERM,
SIGHUP and SIGINT (dispositions survive ``exec``) and execs a Python that
sleeps with the marker on its command line, plus a forked (not exec'd) child
renamed to the marker that also ignores them. The candidate returns once both
carry the marker in ``/proc`` (and a moment more, for the host to see them).

Expected: no marked process is alive on the host after ``run`` returns.
"""

import ctypes
import os
import signal
import sys
import time


def _name(marker):
    """Rename the calling thread (prctl PR_SET_NAME), so the host can find it."""
    if ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_NAME) failed")


def f(x, marker):
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, signal.SIG_IGN)
    execd = os.fork()
    if execd == 0:
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(20)", marker])
    forked = os.fork()
    if forked == 0:
        try:
            _name(marker)
            time.sleep(20)
        finally:
            os._exit(0)
    needle = marker.encode()
    while not (_has(execd, "cmdline", needle) and _has(forked, "comm", needle)):
        time.sleep(0.01)  # a busy machine takes its time starting Python
    time.sleep(0.5)  # let the host see them
    return x + 1


def _has(pid, name, needle):
    try:
        with open(f"/proc/{pid}/{name}", "rb") as fh:
            return needle in fh.read()
    except OSError:
        return False
