# ruff: noqa
"""Promise: a candidate cannot outlive its time limit.

Attack: the per-case clock is kept by the zygote, which learns when a case
started from a header the child shares with it (the ``Region``: ``current``
case and ``started`` time). Having read the source, a slow candidate runs a
thread that keeps rewriting that header (``mode``: ``hide_current`` says no
case is running; ``refresh_start`` says the case started just now), then takes
2.5 s for a case whose limit is 1 s, and returns the right answer.

Expected: the case is a ``timeout`` (within its limit plus grace), not ``ok``.
"""

import gc
import sys
import threading
import time


def _region():
    """The harness's result channel: found on the stack, or among all objects."""
    frame = sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if type(value).__name__ == "Region" and hasattr(value, "mm"):
                return value
        frame = frame.f_back
    gc.unfreeze()  # the zygote freezes its objects before forking; thaw them
    for obj in gc.get_objects():
        if type(obj).__name__ == "Region" and hasattr(obj, "mm"):
            return obj
    return None


def _scribble(r, mode, stop):
    while not stop.is_set():
        if mode == "hide_current":
            r.current = -1
        else:
            r.started = time.monotonic()
        r._publish()
        time.sleep(0.005)


def f(x, mode):
    r = _region()
    if r is None:
        raise RuntimeError("ATTACK-NO-CHANNEL: the harness's case header was not found")
    stop = threading.Event()
    threading.Thread(target=_scribble, args=(r, mode, stop), daemon=True).start()
    end = time.monotonic() + 2.5
    while time.monotonic() < end:
        pass
    stop.set()
    return x + 1
