# ruff: noqa
"""Promise: a candidate cannot exhaust the host with output.

Attack (``mode``): write 1 GiB to stdout and return; write to stdout forever;
write to stderr forever.

Expected: the captured output is capped at the output limit, the grader's
memory does not grow with the flood, ``run`` returns in bounded time (forever
floods end as ``timeout``), the next candidate passes.
"""

import os


def f(mode):
    block = b"A" * (1 << 20)
    if mode == "gib_stdout":
        for _ in range(1024):
            os.write(1, block)
        return "flooded"
    fd = 1 if mode == "forever_stdout" else 2
    while True:
        os.write(fd, block)
