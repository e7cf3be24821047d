# ruff: noqa
"""Promise: a candidate cannot hang the grader.

Attack: ``kill(-1, SIGSTOP)``: freeze every process this uid may signal.

NEVER run this without isolation.

Expected: as for ``stop_parent``.
"""

import os
import signal
import time


def f(x):
    os.kill(-1, signal.SIGSTOP)
    time.sleep(30)
    return x + 1
