# ruff: noqa
"""Promise: a candidate's threads cannot outlive it.

Attack: start non-daemon threads that spin forever (each renamed to the
marker, visible from the host as ``/proc/*/task/*/comm``), then return the
right answer so the harness reaches its end with threads still running.

Expected: the case passes, ``run`` returns without waiting for the threads,
and no marked thread exists on the host afterwards.
"""
import threading


def _spin(marker):
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as fh:
            fh.write(marker)
    except OSError:
        pass
    while True:
        pass


def f(x, marker):
    for _ in range(3):
        threading.Thread(target=_spin, args=(marker,)).start()
    return x + 1
