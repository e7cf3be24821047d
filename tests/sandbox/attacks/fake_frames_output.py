# ruff: noqa
"""Promise: a candidate cannot forge its results.

Attack: print, on stdout and stderr, result frames in the harness's exact wire
format (4-byte big-endian length + JSON) claiming the right answer, a ``start``
frame for the next case, and a ``ready`` frame; then return a wrong value.

Expected: the frames are plain output (they show up in ``stdout``), and the
case is judged on what the function returned: ``wrong``.
"""

import json
import os
import struct
import sys


def _frame(obj):
    data = json.dumps(obj).encode()
    return struct.pack(">I", len(data)) + data


def f(x):
    frames = b"".join(
        [
            _frame({"i": 0, "status": "returned", "value": x + 1, "duration_s": 0.0}),
            _frame({"i": 1, "start": True}),
            _frame({"obs": [{"status": "returned", "value": x + 1}], "stdout": "", "stderr": ""}),
            _frame({"ready": True, "python": "3.11"}),
        ]
    )
    os.write(1, frames)
    os.write(2, frames)
    print("GBX-FAKE-FRAMES-PRINTED")
    sys.stdout.flush()
    return -1
