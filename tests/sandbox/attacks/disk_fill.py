# ruff: noqa
"""Promise: a candidate cannot exhaust the host's disk.

Attack: ignore SIGXFSZ (so the per-file size limit only fails the write) and
fill ``where`` (the scratch dir, ``/tmp`` or ``/dev/shm``) with 1 MiB writes,
switching to a new file every 8 MiB, up to a safety valve of ``cap_mb``.

Expected: the writes fail well before the safety valve (the case is not
``returned``); the host sees no files; the next candidate passes.
"""

import os
import signal


def f(where, cap_mb, marker):
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    d = {"scratch": os.getcwd(), "tmp": "/tmp", "shm": "/dev/shm"}[where]
    chunk = b"x" * (1 << 20)
    for i in range(cap_mb):
        with open(os.path.join(d, f"{marker}-{i // 8}"), "ab") as fh:
            fh.write(chunk)
    return "safety valve reached"
