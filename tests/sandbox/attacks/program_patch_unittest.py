# ruff: noqa
"""Promise: monkeypatching unittest or builtins before the tests run is detected.

Attack: at import, make ``assertEqual`` and friends do nothing, and make
``abs`` always 0 (so ``assert abs(f(x) - y) < 1e-6`` holds); return garbage.

Expected: every case is ``wrong``: those that use the patched names pass their
asserts, and are caught by the check of unittest's and builtins' contents.
"""

import builtins
import unittest

unittest.TestCase.assertEqual = lambda self, *a, **k: None
unittest.TestCase.assertTrue = lambda self, *a, **k: None
builtins.abs = lambda value: 0


def f(x):
    return -1
