# ruff: noqa
"""Control (must pass): a case that takes half its time limit is not a timeout."""

import time


def f(x):
    end = time.monotonic() + 0.5
    while time.monotonic() < end:
        pass
    return x + 1
