# ruff: noqa
"""Control (must pass): printing a lot (1 MB) is allowed; only the capture is capped."""


def f(x):
    for i in range(10_000):
        print(f"line {i:05d} " + "." * 90)
    return x + 1
