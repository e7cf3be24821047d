# ruff: noqa
"""Promise: a candidate cannot take the grader down.

Attack: SIGKILL the process that forked us (the zygote / worker).

Expected: ``run`` returns in bounded time without an ``infra_error`` (the
candidate did it, so it is the candidate's failure, not a grader failure), the
case is not ``ok``, and the same sandbox grades the next candidate correctly.
"""

import os
import signal
import time


def f(x):
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(0.2)
    return x + 1
