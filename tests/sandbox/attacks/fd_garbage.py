# ruff: noqa
"""Promise: a candidate cannot take the grader down or forge its results.

Attack: write garbage, then a plausible fake result frame (length-prefixed
JSON claiming the right answer), to every descriptor 0-255, then close them all
and return a wrong value.

Expected: no ``infra_error``, the case is not ``ok``, the next candidate is
graded correctly.
"""

import json
import os
import struct


def f(x):
    fake = json.dumps({"i": 0, "status": "returned", "value": x + 1, "duration_s": 0.0}).encode()
    payload = b"\xff\xfe\x00garbage\n" * 64 + struct.pack(">I", len(fake)) + fake
    for fd in range(256):
        try:
            os.write(fd, payload)
        except OSError:
            pass
    for fd in range(256):
        try:
            os.close(fd)
        except OSError:
            pass
    return -1
