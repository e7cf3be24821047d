# ruff: noqa
"""Promise: a candidate cannot outlive its time limit.

Attack (aimed at how the clock is kept): the per-case clock is kept by the job
process that forked the candidate, and the candidate has the same uid, so it
can signal it. It stops the job process (SIGSTOP), computes for longer than
its case may take, returns the right answer (the harness publishes it), and a
thread wakes the job process again (SIGCONT) just after: the job process then
finds a published answer and no way to tell that it came late.

Expected: the case is a ``timeout``, not ``ok``; the run is not an
``infra_error``; the next candidate is graded.
"""

import os
import signal
import threading
import time


def _wake(ppid, after):
    time.sleep(after)
    os.kill(ppid, signal.SIGCONT)


def f(x, work_s=2.5):
    ppid = os.getppid()
    threading.Thread(target=_wake, args=(ppid, work_s + 0.2), daemon=True).start()
    os.kill(ppid, signal.SIGSTOP)
    end = time.monotonic() + work_s
    while time.monotonic() < end:
        pass
    return x + 1
