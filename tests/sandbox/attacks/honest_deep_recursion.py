# ruff: noqa
"""Control (must pass): raising the recursion limit and recursing 10 000 deep."""

import sys

sys.setrecursionlimit(20_000)


def _depth(n):
    return 0 if n == 0 else 1 + _depth(n - 1)


def f(n):
    return _depth(n)
