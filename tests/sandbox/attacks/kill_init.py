# ruff: noqa
"""Promise: a candidate cannot take the grader down.

Attack: SIGSTOP, SIGINT, SIGHUP, SIGUSR1, SIGTERM and SIGKILL to PID 1 (the
namespace's init, which is the harness itself and holds the grader's pipes;
or the host's).

NEVER run this without isolation.

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
    for sig in (
        signal.SIGSTOP,
        signal.SIGINT,
        signal.SIGHUP,
        signal.SIGUSR1,
        signal.SIGTERM,
        signal.SIGKILL,
    ):
        try:
            os.kill(1, sig)
        except OSError:
            pass
    time.sleep(0.2)
    return -1
