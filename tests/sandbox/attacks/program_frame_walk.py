# ruff: noqa
"""Promise: the known frame-walking forgeries of a test program are detected.

Attack: the test holds its expected values; read them from the calling test's
frame (``sys._getframe(1)``: its locals, or the constants of its code) and
return what the assert compares with.

Expected: every case is ``wrong`` ("reached for the stack's frames"), though
the returned values would make the asserts pass.
"""

import sys


def f(x):
    caller = sys._getframe(1)
    if "secret" in caller.f_locals:
        return caller.f_locals["secret"]
    consts = [c for c in caller.f_code.co_consts if isinstance(c, int) and c != x]
    return consts[0] if consts else x * x
