# ruff: noqa
"""Promise: a candidate cannot change the limits or scheduling of the harness.

Attack: init and the supervisor share our uid and outlive us. Lower their
limits (``prlimit``), nice them to 19 (by pid and for the whole uid), make them
``SCHED_IDLE``, pin them to one CPU, lower their I/O priority: every later
candidate on this worker would be graded by a starved clock.

Expected: each call on another process fails with ``EPERM``; the same calls on
ourselves (pid 0) still work, so ordinary code is not broken; the supervisor's
nice value and policy are what they were.
"""

import ctypes
import errno
import os
import resource


def _supervisor():
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


def _try(call):
    try:
        call()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok"


def _ioprio_set(which, who):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.syscall(251, which, who, (3 << 13) | 7) != 0:  # x86_64 ioprio_set, IDLE class
        raise OSError(ctypes.get_errno(), "ioprio_set")


def _nice_and_policy(pid):
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return int(fields[16]), int(fields[38])  # nice, policy


def f():
    sup = _supervisor()
    before = list(_nice_and_policy(sup))
    targets = {"supervisor": sup, "init": 1}
    got = {}
    for name, pid in targets.items():
        got[f"prlimit {name}"] = _try(lambda: resource.prlimit(pid, resource.RLIMIT_NOFILE, (3, 3)))
        got[f"setpriority {name}"] = _try(lambda: os.setpriority(os.PRIO_PROCESS, pid, 19))
        got[f"sched_idle {name}"] = _try(
            lambda: os.sched_setscheduler(pid, os.SCHED_IDLE, os.sched_param(0))
        )
        got[f"affinity {name}"] = _try(lambda: os.sched_setaffinity(pid, {0}))
        got[f"ioprio {name}"] = _try(lambda: _ioprio_set(1, pid))
    got["setpriority uid"] = _try(lambda: os.setpriority(os.PRIO_USER, 0, 19))
    got["setpriority group"] = _try(lambda: os.setpriority(os.PRIO_PGRP, 0, 19))
    got["ioprio uid"] = _try(lambda: _ioprio_set(3, os.getuid()))
    # Ourselves: still allowed.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    got["self prlimit"] = _try(lambda: resource.prlimit(0, resource.RLIMIT_NOFILE, (soft, hard)))
    mine = os.getpriority(os.PRIO_PROCESS, 0)  # the harness runs niced: no lower value
    got["self setpriority"] = _try(lambda: os.setpriority(os.PRIO_PROCESS, 0, mine))
    got["self affinity"] = _try(lambda: os.sched_setaffinity(0, os.sched_getaffinity(0)))
    got["self ioprio"] = _try(lambda: _ioprio_set(1, 0))
    got["supervisor nice, policy"] = [before, list(_nice_and_policy(sup))]
    return got
