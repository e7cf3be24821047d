# ruff: noqa
"""Promise: a candidate cannot hang the grader.

Attack: SIGSTOP the process that forked us, so it can neither enforce the
clock nor answer the grader; then idle.

Expected: ``run`` returns within the candidate limit plus the grader's grace,
no ``infra_error``, the case is not ``ok``, the next candidate is graded.
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
    os.kill(os.getppid(), signal.SIGSTOP)
    time.sleep(30)
    return x + 1
