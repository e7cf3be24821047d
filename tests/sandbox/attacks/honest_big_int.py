# ruff: noqa
"""Control (must pass): big ints (2**10000 is beyond str()'s default digit limit)."""


def f(n):
    return 2**n
