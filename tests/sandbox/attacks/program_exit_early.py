# ruff: noqa
"""Promise: a test-program case passes only with its own result, after the test returned.

Attack: end the process (``os._exit(0)``, the exit code a harness reading exit
statuses would call success) or raise ``SystemExit(0)`` from inside the call the
test makes, before any assert can fail.

Expected: the cases are ``crash`` or ``error``, never ``ok``.
"""

import os


def f(x):
    if x == 2:
        raise SystemExit(0)
    os._exit(0)
