# ruff: noqa
"""Promise: a candidate cannot take the grader down.

Attack: ``kill(-1, SIGKILL)``: every process this uid may signal.

NEVER run this without isolation: as root on the host it kills every process.

Expected: as for ``kill_parent``.
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
    os.kill(-1, signal.SIGKILL)
    time.sleep(0.2)
    return x + 1
