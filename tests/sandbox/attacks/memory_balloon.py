# ruff: noqa
"""Promise: a candidate cannot exhaust the host's memory.

Attack (``mode``): ``bytearray(8 GiB)`` at once; or grow a list of 16 MiB
blocks (each written, so the pages are real) up to a 3 GiB safety valve.

Expected: the allocation fails or the process is stopped (``raised``
MemoryError, ``crash`` or ``timeout``); the safety value is never reached;
the next candidate passes.
"""

import ctypes


def _name(marker):
    """Rename the calling thread (prctl PR_SET_NAME), so the host can find it."""
    if ctypes.CDLL(None).prctl(15, marker.encode(), 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_NAME) failed")


def f(mode, marker):
    _name(marker)
    if mode == "8gib":
        buf = bytearray(8 << 30)
        return len(buf)
    blocks = []
    for _ in range(3 * 64):
        blocks.append(bytearray(b"x") * (16 << 20))
    return "safety valve reached"
