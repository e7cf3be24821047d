# ruff: noqa
"""Promise: a stand-in module in ``sys.modules`` does not pass a test program's checks.

Attack: the test imports ``math`` (loaded before the candidate) and ``fractions``
(not loaded yet) itself; put stand-ins in ``sys.modules`` under both names whose
``isclose`` is always true and whose ``Fraction`` equals anything; return garbage.

Expected: every case is ``wrong``.
"""

import sys
import types


class _Any:
    def __init__(self, *a, **k):
        pass


fake_math = types.ModuleType("math")
fake_math.isclose = lambda *a, **k: True
fake_math.fabs = lambda x: 0.0
sys.modules["math"] = fake_math
fake_fractions = types.ModuleType("fractions")
fake_fractions.Fraction = lambda *a: 9
sys.modules["fractions"] = fake_fractions


def f(x):
    return -1
