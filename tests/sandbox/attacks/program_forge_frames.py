# ruff: noqa
"""Known gap: a candidate in the test program's process can forge the test results.

Attack: at import (no test is running, nothing is watched), walk up the stack
to the harness's frame, take its result region and the job, and publish a
passing frame for every case; then exit before any test runs.

Expected (what gradebox promises): this is not detected. The test documents the
gap (a strict xfail): rows of such tasks say ``kind: program`` for this reason,
and convertible checks are converted so that they never run inside.
"""

import os
import sys
import time

frame = sys._getframe()
while frame is not None:
    local = frame.f_locals
    if "region" in local and "job" in local:
        for i in range(len(local["job"]["cases"])):
            local["region"].append({"i": i, "status": "returned", "value": True, "duration_s": 0.0})
        time.sleep(0.2)
        os._exit(0)
    frame = frame.f_back


def f(x):
    return -1
