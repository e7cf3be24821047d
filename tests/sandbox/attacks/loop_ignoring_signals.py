# ruff: noqa
"""Promise: a candidate cannot outlive its time limit.

Attack: make every in-process clock and timer useless before looping: ignore
SIGTERM, SIGINT, SIGHUP, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU and SIGUSR1/2,
disarm ``signal.alarm``/``setitimer``, and freeze ``time.time``,
``time.monotonic`` and ``time.perf_counter`` (in case the harness keeps its
clock in the candidate's process).

Expected: still a ``timeout`` within the case limit plus grace; the later case
passes.
"""

import signal
import time


def f(x):
    if x == 0:
        for sig in (
            "SIGTERM",
            "SIGINT",
            "SIGHUP",
            "SIGALRM",
            "SIGVTALRM",
            "SIGPROF",
            "SIGXCPU",
            "SIGUSR1",
            "SIGUSR2",
        ):
            try:
                signal.signal(getattr(signal, sig), signal.SIG_IGN)
            except Exception:
                pass
        signal.alarm = lambda *a: 0
        signal.setitimer = lambda *a: (0.0, 0.0)
        time.time = time.monotonic = time.perf_counter = lambda: 0.0
        while True:
            pass
    return x + 1
