# ruff: noqa
"""Promise: a candidate cannot take the grader down.

Attack: SIGKILL and SIGTERM to PID 1 (the namespace's init, or the host's).

NEVER run this without isolation.

Expected: as for ``kill_parent``.
"""

import os
import signal
import time


def f(x):
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(1, sig)
        except OSError:
            pass
    time.sleep(0.2)
    return -1
