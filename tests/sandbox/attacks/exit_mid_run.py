# ruff: noqa
"""Promise: a candidate cannot forge its results.

Attack: pass case 0, then ``os._exit(0)`` (a clean exit status, no exception,
no result) in the middle of case 1, hoping a quiet exit reads as success.

Expected: case 0 ``ok``, case 1 ``crash``, no ``infra_error``; the cases
after it run in a fresh process.
"""

import os


def f(x):
    if x == 1:
        os._exit(0)
    return x + 1
