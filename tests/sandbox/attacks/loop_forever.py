# ruff: noqa
"""Promise: a candidate cannot outlive its time limit.

Attack: the plainest one, an infinite loop on the first case (``x == 0``).

Expected: that case is a ``timeout`` within the case limit plus a small grace,
and the later case runs in a fresh process and passes.
"""


def f(x):
    if x == 0:
        while True:
            pass
    return x + 1
