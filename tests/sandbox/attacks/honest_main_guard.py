# ruff: noqa
"""Control (must pass): a ``__main__`` block that would block on input() must not run."""


def f(x):
    return x + 1


if __name__ == "__main__":
    print(f(int(input("x? "))))
