# ruff: noqa
"""Promise: a candidate cannot take the grader down.

Attack: ``kill(-1, SIGKILL)``: every process this uid may signal.

NEVER run this without isolation: as root on the host it kills every process.

Expected: as for ``kill_parent``.
"""

import os
import signal
import time


def f(x):
    os.kill(-1, signal.SIGKILL)
    time.sleep(0.2)
    return x + 1
