# ruff: noqa
"""Promise: a candidate cannot outlive its time limit.

Attack (aimed at how the clock is kept): the per-case clock is kept by the
harness's supervisor process, and the candidate has the same uid, so it
can signal it. It stops the supervisor (SIGSTOP), computes for longer than
its case may take, returns the right answer (the harness publishes it), and a
thread wakes the supervisor again (SIGCONT) just after: the supervisor then
finds a published answer and no way to tell that it came late.

Expected: the case is a ``timeout``, not ``ok``; the run is not an
``infra_error``; the next candidate is graded.
"""

import os
import signal
import threading
import time


def _supervisor():
    """The harness process that keeps our clock and answers the grader.

    Init forks the candidate's process but a supervisor beside it (init's other
    child) reads the results: the process to hit is our parent's other child.
    """
    me, parent = os.getpid(), os.getppid()
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == me:
            continue
        try:
            with open(f"/proc/{p}/stat") as fh:
                ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == parent:
            return int(p)
    raise RuntimeError("ATTACK-NO-CHANNEL: the harness's supervisor was not found")


def _wake(ppid, after):
    time.sleep(after)
    os.kill(ppid, signal.SIGCONT)


def f(x, work_s=2.5):
    ppid = _supervisor()
    threading.Thread(target=_wake, args=(ppid, work_s + 0.2), daemon=True).start()
    os.kill(ppid, signal.SIGSTOP)
    end = time.monotonic() + work_s
    while time.monotonic() < end:
        pass
    return x + 1
