# ruff: noqa
"""Promise: an object that equals anything does not pass a test program's asserts.

Attack: return an instance whose ``__eq__`` is always true (and a subclass of
``int`` doing the same, whose class claims to be ``numbers.Integral``), so ``assert f(x) == y`` and ``assertEqual`` hold.

Expected: every case is ``wrong`` ("returned an object whose class defines __eq__").
"""


class Anything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__


class SlyInt(int):
    def __eq__(self, other):
        return True

    __hash__ = int.__hash__


SlyInt.__module__ = "numbers"  # claims to be the standard library's
SlyInt.__qualname__ = "Integral"


def f(x):
    return [Anything(), SlyInt(0)][x % 2]
