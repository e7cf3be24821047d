# ruff: noqa
"""Promise: exiting while the candidate's module loads passes nothing.

Attack: ``os._exit(0)`` at import, before any test runs.

Expected: every case is ``crash``.
"""

import os

os._exit(0)


def f(x):
    return x * x
