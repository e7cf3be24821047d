# ruff: noqa
"""Promise: a candidate cannot exhaust the host with processes.

Attack: every process forks as fast as it can and never stops retrying when
fork fails; each is renamed to the marker so the host can count them. A safety
valve, a fork budget inherited by each child (a binomial tree: at most
2**11 = 2048 processes), keeps a broken sandbox from taking the test machine
down while still failing this test.

NEVER run this without isolation.

Expected: the number of live marked processes stays near the process limit,
the case ends (``timeout``) in bounded time, no marked process survives, the
next candidate passes.
"""

import ctypes
import os
import time


def _name(marker):
    """Rename the calling thread (prctl PR_SET_NAME), so the host can find it."""
    if ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_NAME) failed")


def f(marker):
    _name(marker)
    budget = 11
    while budget > 0:
        try:
            pid = os.fork()
        except OSError:
            continue
        budget -= 1
    time.sleep(30)
