# ruff: noqa
"""Promise: a candidate cannot hang the grader or forge its results.

Attack: register exit hooks (``atexit``, ``threading._register_atexit``, a
``__del__`` on a module global, ``sys.exitfunc``-style hooks) that print fake
frames, write a forged result to descriptor 3 and then sleep forever; return a
wrong value.

Expected: ``run`` returns promptly, the case is ``wrong``, no
``infra_error``, the next candidate passes.
"""

import atexit
import json
import os
import struct
import threading
import time


def _forge_and_hang():
    data = json.dumps({"i": 0, "status": "returned", "value": 2}).encode()
    for fd in (1, 2, 3):
        try:
            os.write(fd, struct.pack(">I", len(data)) + data)
        except OSError:
            pass
    time.sleep(60)


class _Haunt:
    def __del__(self):
        _forge_and_hang()


_GHOST = _Haunt()


def f(x):
    atexit.register(_forge_and_hang)
    try:
        threading._register_atexit(_forge_and_hang)
    except Exception:
        pass
    return -1
