# ruff: noqa
"""Promise: a candidate cannot hang the grader.

Attack: ``kill(-1, SIGSTOP)``: freeze every process this uid may signal.

NEVER run this without isolation.

Expected: as for ``stop_parent``.
"""

import ctypes
import os
import signal
import time


def _name(marker):
    """Rename this process (prctl PR_SET_NAME), so the host can find it."""
    ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0)


def f(x, marker):
    _name(marker)
    os.kill(-1, signal.SIGSTOP)
    time.sleep(30)
    return x + 1
