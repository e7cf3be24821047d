# ruff: noqa
"""Promise: a candidate cannot exhaust the host with threads.

Attack: start sleeping threads until it fails, each renamed to the marker so
the host can count them; a safety valve stops at 3000 threads.

Expected: the number of marked threads stays near the process/thread limit,
the case is not ``ok``, nothing survives, the next candidate passes.
"""

import ctypes
import threading
import time


def _name(marker):
    """Rename the calling thread (prctl PR_SET_NAME), so the host can find it."""
    if ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_NAME) failed")


def _sleep(marker):
    _name(marker)
    time.sleep(30)


def f(marker):
    n = 0
    try:
        while n < 3000:
            threading.Thread(target=_sleep, args=(marker,), daemon=True).start()
            n += 1
    except RuntimeError:
        time.sleep(0.5)  # hold the threads we got, so the host sees them
        raise
    return "safety valve reached"
