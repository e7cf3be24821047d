# ruff: noqa
"""Promise: a candidate's module cannot change what the test program's names mean.

Attack: the test program runs in a view of the candidate's module (it calls the
candidate's functions by name). Define module-level ``abs`` (always 0), replace
the module's ``__builtins__`` with a dict whose ``abs`` and ``isinstance`` lie,
and bind ``unittest`` to a stand-in whose ``TestCase.assertEqual`` does nothing;
return garbage.

Expected: every case is ``wrong``: the test sees the real builtins and modules.
"""

import builtins as _real


def abs(value):
    return 0


class unittest:  # a stand-in where the test program expects the module
    class TestCase:
        def assertEqual(self, *a, **k):
            pass

        def assertTrue(self, *a, **k):
            pass


__builtins__ = {**vars(_real), "abs": lambda value: 0}


def f(x):
    return -1
