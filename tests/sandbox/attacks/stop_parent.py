# ruff: noqa
"""Promise: a candidate cannot hang the grader.

Attack: SIGSTOP the process that forked us, so it can neither enforce the
clock nor answer the grader; then idle.

Expected: ``run`` returns within the candidate limit plus the grader's grace,
no ``infra_error``, the case is not ``ok``, the next candidate is graded.
"""

import os
import signal
import time


def f(x):
    os.kill(os.getppid(), signal.SIGSTOP)
    time.sleep(30)
    return x + 1
