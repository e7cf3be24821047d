# ruff: noqa
"""Promise: a candidate cannot leave anything behind for a later candidate.

Attack (aimed at how this sandbox is built): the harness's supervisor lives as
long as the worker and shares the tree's memory cap with every candidate that
follows. ``inflate`` returns a result near the size limit and prints a flood,
so the supervisor copies, validates and encodes megabytes; if its heap kept
them, every later candidate on the worker would have that much less memory
before being stopped. ``look``, run next on the same worker, reports the
supervisor's resident set (``/proc/<pid>/status`` is readable to same-uid code).

Expected: ``inflate`` is graded; ``look`` sees the supervisor back near its
size at start (under 24 MiB; it starts near 16).
"""

import os


def inflate(n):
    print("y" * 100_000)
    return ["x" * 1000] * n


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


def look():
    with open(f"/proc/{_supervisor()}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("ATTACK-NO-CHANNEL: no VmRSS")
