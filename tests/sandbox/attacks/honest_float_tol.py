# ruff: noqa
"""Control (must pass): a float within the case's tolerance, also inside a container."""


def f(xs):
    total = 0.0
    for x in xs:
        total += x
    return [total, total / len(xs)]
