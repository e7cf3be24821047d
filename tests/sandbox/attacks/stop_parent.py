# ruff: noqa
"""Promise: a candidate cannot hang the grader.

Attack: SIGSTOP the harness process that supervises us, so it can neither
enforce the clock nor answer the grader; then idle.

Expected: ``run`` returns within twice the candidate limit plus the grader's grace
(a silent play is played again once),
no ``infra_error``, the case is not ``ok``, the next candidate is graded.
"""

import ctypes
import os
import signal
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


def _name(marker):
    """Rename this process (prctl PR_SET_NAME), so the host can find it."""
    ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0)


def f(x, marker):
    _name(marker)
    os.kill(_supervisor(), signal.SIGSTOP)
    time.sleep(30)
    return x + 1
