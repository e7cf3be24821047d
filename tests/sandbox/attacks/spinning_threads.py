# ruff: noqa
"""Promise: a candidate's threads cannot outlive it.

Attack: start non-daemon threads that spin forever (each renamed to the
marker, visible from the host as ``/proc/*/task/*/comm``), then return the
right answer so the harness reaches its end with threads still running.

Expected: the case passes, ``run`` returns without waiting for the threads,
and no marked thread exists on the host afterwards.
"""

import ctypes
import threading
import time


def _name(marker):
    """Rename the calling thread (prctl PR_SET_NAME), so the host can find it."""
    if ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_NAME) failed")


def _spin(marker):
    _name(marker)
    while True:
        pass


def f(x, marker):
    for _ in range(3):
        threading.Thread(target=_spin, args=(marker,)).start()
    time.sleep(0.3)  # let the host see them
    return x + 1
