# ruff: noqa
"""Promise: a candidate's threads cannot outlive it.

Attack: start non-daemon threads that spin forever (each renamed to the
marker, visible from the host as ``/proc/*/task/*/comm``), wait until all of
them carry the marker, hold them there a moment for the host to see, then
return the right answer so the harness reaches its end with threads still
running. (A starved candidate may run out of its case's time before the threads
are named: the test then sees no threads and a timeout, and plays it again.)

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


def _spin(marker, named):
    _name(marker)
    named.release()
    while True:
        pass


def f(x, marker):
    named = threading.Semaphore(0)
    for _ in range(3):
        threading.Thread(target=_spin, args=(marker, named)).start()
    for _ in range(3):
        named.acquire()  # every thread carries the marker now
    time.sleep(0.5)  # let the host see them
    return x + 1
