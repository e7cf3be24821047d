# ruff: noqa
"""Promise: a candidate cannot take the grader down.

Attack: SIGKILL the process that forked us (the zygote / worker).

Expected: ``run`` returns in bounded time without an ``infra_error`` (the
candidate did it, so it is the candidate's failure, not a grader failure), the
case is not ``ok``, and the same sandbox grades the next candidate correctly.
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
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(0.2)
    return x + 1
