# ruff: noqa
"""Promise: a candidate cannot exhaust the host with threads.

Attack: start sleeping threads until it fails, each renamed to the marker so
the host can count them; a safety valve stops at 3000 threads.

Expected: the number of marked threads stays near the process/thread limit,
the case is not ``ok``, nothing survives, the next candidate passes.
"""
import threading
import time


def _sleep(marker):
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as fh:
            fh.write(marker)
    except OSError:
        pass
    time.sleep(30)


def f(marker):
    n = 0
    while n < 3000:
        threading.Thread(target=_sleep, args=(marker,), daemon=True).start()
        n += 1
    return "safety valve reached"
